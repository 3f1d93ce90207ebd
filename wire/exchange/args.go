package exchange

import (
	"bytes"
	"encoding/json"
)

// ArgsText is a tool call's arguments as compact JSON text, as llm.ToolCall
// holds them: "{}" when they are missing or null, and the text as it came
// when it is not valid JSON (the model's words are never dropped).
func ArgsText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "{}"
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}
