package anthropic

import (
	"encoding/json"
	"fmt"

	"github.com/detourhq/detour/internal/jsonw"
)

// appendJSON appends r as encoding/json writes it with HTML escaping off,
// field for field (FuzzAppendJSONMatchesEncoder holds it to that): the
// request body without reflection.
func (r *messagesRequest) appendJSON(b []byte) ([]byte, error) {
	var err error
	b = append(b, `{"model":`...)
	b = jsonw.String(b, r.Model)
	b = append(b, `,"max_tokens":`...)
	b = jsonw.Int(b, r.MaxTokens)
	if len(r.System) > 0 {
		b = append(b, `,"system":`...)
		if b, err = jsonw.Raw(b, r.System); err != nil {
			return nil, fmt.Errorf("system: %w", err)
		}
	}
	b = append(b, `,"messages":`...)
	if r.Messages == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range r.Messages {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = r.Messages[i].appendJSON(b); err != nil {
				return nil, fmt.Errorf("messages[%d]: %w", i, err)
			}
		}
		b = append(b, ']')
	}
	if len(r.Tools) > 0 {
		b = append(b, `,"tools":[`...)
		for i, t := range r.Tools {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"name":`...)
			b = jsonw.String(b, t.Name)
			if t.Description != "" {
				b = append(b, `,"description":`...)
				b = jsonw.String(b, t.Description)
			}
			b = append(b, `,"input_schema":`...)
			if b, err = appendRawOrNull(b, t.InputSchema); err != nil {
				return nil, fmt.Errorf("tools[%d]: %w", i, err)
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if len(r.ToolChoice) > 0 {
		b = append(b, `,"tool_choice":`...)
		if b, err = jsonw.Raw(b, r.ToolChoice); err != nil {
			return nil, fmt.Errorf("tool_choice: %w", err)
		}
	}
	if len(r.StopSequences) > 0 {
		b = append(b, `,"stop_sequences":`...)
		b = jsonw.Strings(b, r.StopSequences)
	}
	for _, f := range []struct {
		name string
		v    *float64
	}{{`,"temperature":`, r.Temperature}, {`,"top_p":`, r.TopP}} {
		if f.v != nil {
			b = append(b, f.name...)
			if b, err = jsonw.Float(b, *f.v); err != nil {
				return nil, err
			}
		}
	}
	if r.Stream {
		b = append(b, `,"stream":true`...)
	}
	if t := r.Thinking; t != nil {
		b = append(b, `,"thinking":{"type":`...)
		b = jsonw.String(b, t.Type)
		b = append(b, `,"budget_tokens":`...)
		b = jsonw.Int(b, t.BudgetTokens)
		b = append(b, '}')
	}
	return append(b, '}'), nil
}

// appendRawOrNull appends raw as jsonw.Raw does, or null when it is nil
// (a json.RawMessage field without omitempty).
func appendRawOrNull(b []byte, raw json.RawMessage) ([]byte, error) {
	if raw == nil {
		return append(b, "null"...), nil
	}
	return jsonw.Raw(b, raw)
}

// appendJSON appends a turn: its content is a string, a list of blocks, or
// (for any other value, which EncodeRequest never makes) what
// encoding/json writes for it.
func (t *turn) appendJSON(b []byte) ([]byte, error) {
	b = append(b, `{"role":`...)
	b = jsonw.String(b, t.Role)
	b = append(b, `,"content":`...)
	switch c := t.Content.(type) {
	case string:
		b = jsonw.String(b, c)
	case []block:
		if c == nil {
			b = append(b, "null"...)
			break
		}
		b = append(b, '[')
		for i := range c {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = c[i].appendJSON(b); err != nil {
				return nil, err
			}
		}
		b = append(b, ']')
	default:
		out, err := json.Marshal(c)
		if err != nil {
			return nil, err
		}
		b = append(b, out...)
	}
	return append(b, '}'), nil
}

// appendJSON appends a content block, its empty fields left out.
func (k *block) appendJSON(b []byte) ([]byte, error) {
	b = append(b, `{"type":`...)
	b = jsonw.String(b, k.Type)
	for _, f := range []struct{ name, v string }{
		{`,"text":`, k.Text}, {`,"id":`, k.ID}, {`,"name":`, k.Name},
	} {
		if f.v != "" {
			b = append(b, f.name...)
			b = jsonw.String(b, f.v)
		}
	}
	if len(k.Input) > 0 {
		b = append(b, `,"input":`...)
		var err error
		if b, err = jsonw.Raw(b, k.Input); err != nil {
			return nil, err
		}
	}
	for _, f := range []struct{ name, v string }{{`,"tool_use_id":`, k.ToolUseID}, {`,"content":`, k.Content}} {
		if f.v != "" {
			b = append(b, f.name...)
			b = jsonw.String(b, f.v)
		}
	}
	if s := k.Source; s != nil {
		b = append(b, `,"source":{"type":`...)
		b = jsonw.String(b, s.Type)
		for _, f := range []struct{ name, v string }{{`,"media_type":`, s.MediaType}, {`,"data":`, s.Data}, {`,"url":`, s.URL}} {
			if f.v != "" {
				b = append(b, f.name...)
				b = jsonw.String(b, f.v)
			}
		}
		b = append(b, '}')
	}
	if k.Title != "" {
		b = append(b, `,"title":`...)
		b = jsonw.String(b, k.Title)
	}
	return append(b, '}'), nil
}
