package gateway

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/detourhq/detour/internal/jsonw"
	"github.com/detourhq/detour/llm"
)

// The Responses surface: POST /v1/responses in, a response object or its
// event stream out, as the OpenAI Agents SDK and openai-go read them. It is
// stateless: detour keeps no response, so previous_response_id,
// conversation and item references are refused with a 400 (a chain may
// move on to a target that never saw them). A target of dialect
// openai-responses gets the request raw (llm.Raw): every field the client
// wrote but model, its reasoning items and store included, and the
// client gets the provider's answer or events as they came. For a target
// of another dialect the request is translated to llm's canonical form,
// and what it carries beyond it is a need by name (llm.Request.Needs) that
// a target carries, drops (the answer then degraded) or is skipped for.

// rsRequest is the part of a Responses request detour reads.
type rsRequest struct {
	Model              string          `json:"model"`
	Models             []string        `json:"models"`
	Input              json.RawMessage `json:"input"`
	Instructions       *string         `json:"instructions"`
	Tools              []rsTool        `json:"tools"`
	ToolChoice         json.RawMessage `json:"tool_choice"`
	ParallelToolCalls  *bool           `json:"parallel_tool_calls"`
	Text               *rsText         `json:"text"`
	Reasoning          *rsReasoning    `json:"reasoning"`
	MaxOutputTokens    *int            `json:"max_output_tokens"`
	Temperature        *float64        `json:"temperature"`
	TopP               *float64        `json:"top_p"`
	Stream             *bool           `json:"stream"`
	Store              *bool           `json:"store"`
	Metadata           json.RawMessage `json:"metadata"`
	User               string          `json:"user"`
	PreviousResponseID string          `json:"previous_response_id"`
	Conversation       json.RawMessage `json:"conversation"`
	Background         *bool           `json:"background"`
	Truncation         string          `json:"truncation"`
	Include            []string        `json:"include"`
}

// rsCovered are the top-level fields the Responses parser reads; any
// other non-null field is a need by its name.
var rsCovered = []string{"model", "models", "detour", "input", "instructions", "tools", "tool_choice",
	"parallel_tool_calls", "text", "reasoning", "max_output_tokens", "temperature", "top_p", "stream",
	"stream_options", "store", "metadata", "user", "previous_response_id", "conversation", "background",
	"truncation", "include"}

type rsTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      *bool           `json:"strict"`
}

type rsText struct {
	Format    json.RawMessage `json:"format"`
	Verbosity *string         `json:"verbosity"`
}

type rsFormat struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Schema      json.RawMessage `json:"schema"`
	Strict      *bool           `json:"strict"`
}

type rsReasoning struct {
	Effort          *string `json:"effort"`
	Summary         *string `json:"summary"`
	GenerateSummary *string `json:"generate_summary"`
}

// rsItem is one input item: a message (with or without "type"), a
// function_call, a function_call_output, or an item detour cannot
// translate.
type rsItem struct {
	Type      string         `json:"type"`
	Role      string         `json:"role"`
	Content   oaContentField `json:"content"`
	CallID    string         `json:"call_id"`
	Name      string         `json:"name"`
	Arguments string         `json:"arguments"`
	Output    oaContentField `json:"output"`
	ID        string         `json:"id"`
}

// rsPart is one content part of an input message or a tool's output.
type rsPart struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	Refusal  string `json:"refusal"`
	ImageURL string `json:"image_url"`
	FileID   string `json:"file_id"`
	Detail   string `json:"detail"`
	FileData string `json:"file_data"`
	FileURL  string `json:"file_url"`
	Filename string `json:"filename"`
}

// errNoState is the 400 of a request that needs a response or a
// conversation kept by the server.
func errNoState(param string) *apiError {
	return &apiError{Status: http.StatusBadRequest, Type: "invalid_request_error", Code: "unsupported_parameter",
		Param: param, Reason: "bad_request",
		Message: param + " is not supported: detour keeps no responses or conversations (store is never honoured); " +
			"send the whole conversation in input, the earlier output items included"}
}

// parseResponses reads a Responses request body into cr: the canonical
// request, its needs and reasoning, and what the answer echoes
// (cr.rsEcho). A body it cannot use is a 400 naming the offending field.
func parseResponses(body []byte, cr *chatRequest) *apiError {
	var in rsRequest
	if ae := decodeJSON(body, &in); ae != nil {
		return ae
	}
	var fields map[string]json.RawMessage
	if ae := decodeJSON(body, &fields); ae != nil {
		return ae
	}
	if ae := checkModels(in.Model, in.Models); ae != nil {
		return ae
	}
	switch {
	case in.PreviousResponseID != "":
		return errNoState("previous_response_id")
	case present(in.Conversation) != nil:
		return errNoState("conversation")
	}
	var n needs
	for k, v := range fields {
		if !slices.Contains(rsCovered, k) && present(v) != nil {
			n.add(k)
		}
	}
	slices.Sort(n) // a map's order is random: the names go in a header
	req := &llm.Request{Temperature: in.Temperature, TopP: in.TopP}
	cr.req, cr.model, cr.models = req, in.Model, in.Models
	if in.Stream != nil {
		cr.stream = *in.Stream
	}
	req.Stream = cr.stream
	if mt := in.MaxOutputTokens; mt != nil {
		if *mt < 1 {
			return badRequest("max_output_tokens", "max_output_tokens must be at least 1, not %d", *mt)
		}
		req.MaxTokens = *mt
	}
	if in.Instructions != nil && *in.Instructions != "" {
		req.Messages = append(req.Messages, llm.Message{Role: llm.RoleSystem, Content: *in.Instructions})
	}
	msgs, ae := rsInput(in.Input, &n)
	if ae != nil {
		return ae
	}
	req.Messages = append(req.Messages, msgs...)
	for i, t := range in.Tools {
		if t.Type != "function" {
			n.add(t.Type + " tool") // web_search, file_search, ...: no target carries it translated
			continue
		}
		if t.Name == "" {
			return badRequest("tools["+strconv.Itoa(i)+"].name", "tools[%d] must be {type: function, name, parameters}", i)
		}
		strict := t.Strict != nil && *t.Strict
		if strict {
			n.add("strict")
		}
		req.Tools = append(req.Tools, llm.Tool{Name: t.Name, Description: t.Description, Parameters: present(t.Parameters), Strict: strict})
	}
	if req.ToolChoice, ae = rsToolChoice(in.ToolChoice, &n); ae != nil {
		return ae
	}
	if p := in.ParallelToolCalls; p != nil && !*p {
		n.add("parallel_tool_calls")
	}
	if t := in.Text; t != nil {
		if t.Verbosity != nil {
			n.add("verbosity")
		}
		if req.ResponseFormat, ae = rsFormatOf(t.Format); ae != nil {
			return ae
		}
		if req.ResponseFormat != nil {
			n.add("response_format")
			if len(in.Tools) > 0 {
				n.add("response_format with tools")
			}
		}
	}
	if r := in.Reasoning; r != nil {
		if r.Effort != nil {
			if slices.Contains(efforts, *r.Effort) {
				req.Reasoning = &llm.Reasoning{Effort: *r.Effort}
				n.add("reasoning_effort")
			} else {
				n.add("reasoning_effort (" + *r.Effort + ")")
			}
		}
		if r.Summary != nil || r.GenerateSummary != nil {
			n.add("reasoning.summary")
		}
	}
	if in.Store != nil && *in.Store {
		n.add("store") // nothing is kept: the answer says store was dropped
	}
	if m := present(in.Metadata); m != nil && !bytes.Equal(bytes.TrimSpace(m), []byte("{}")) {
		n.add("metadata")
	}
	if in.User != "" {
		n.add("user")
	}
	if in.Background != nil && *in.Background {
		n.add("background")
	}
	if in.Truncation != "" && in.Truncation != "disabled" {
		n.add("truncation")
	}
	if len(in.Include) > 0 {
		n.add("include")
	}
	if len(req.Messages) == 0 {
		return badRequest("input", "input is required: a string, or a non-empty list of items")
	}
	req.Needs = n
	cr.rs = rsEchoOf(&in, fields)
	return nil
}

// rsInput reads input: a string (one user message) or a list of items.
// Consecutive function_call items, and one following an assistant
// message, make one assistant turn with several tool calls.
func rsInput(raw json.RawMessage, n *needs) ([]llm.Message, *apiError) {
	raw = present(raw)
	if raw == nil {
		return nil, badRequest("input", "input is required: a string, or a non-empty list of items")
	}
	var text string
	if raw[0] == '"' && json.Unmarshal(raw, &text) == nil {
		return []llm.Message{{Role: llm.RoleUser, Content: text}}, nil
	}
	var items []rsItem
	if raw[0] != '[' || json.Unmarshal(raw, &items) != nil {
		return nil, badRequest("input", "input must be a string or a list of items ({role, content}, function_call, function_call_output)")
	}
	out := make([]llm.Message, 0, len(items))
	for i := range items {
		it := &items[i]
		param := "input[" + strconv.Itoa(i) + "]"
		switch it.Type {
		case "", "message":
			m, ae := rsMessage(it, param, n)
			if ae != nil {
				return nil, ae
			}
			out = append(out, m)
		case "function_call":
			if it.CallID == "" || it.Name == "" {
				return nil, badRequest(param, "%s: a function_call needs a call_id and a name", param)
			}
			tc := llm.ToolCall{ID: it.CallID, Name: it.Name, Arguments: it.Arguments}
			if k := len(out) - 1; k >= 0 && out[k].Role == llm.RoleAssistant {
				out[k].ToolCalls = append(out[k].ToolCalls, tc)
			} else {
				out = append(out, llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{tc}})
			}
		case "function_call_output":
			if it.CallID == "" {
				return nil, badRequest(param+".call_id", "%s: a function_call_output needs a call_id", param)
			}
			text, ae := rsOutputText(it.Output, param+".output", n)
			if ae != nil {
				return nil, ae
			}
			out = append(out, llm.Message{Role: llm.RoleTool, ToolCallID: it.CallID, Content: text})
		case "item_reference":
			return nil, errNoState(param + " (item_reference)")
		default:
			n.add(it.Type + " item") // reasoning, web_search_call, computer_call, ...
		}
	}
	return out, nil
}

// rsMessage reads a message item.
func rsMessage(it *rsItem, param string, n *needs) (llm.Message, *apiError) {
	var m llm.Message
	switch it.Role {
	case "user":
		m.Role = llm.RoleUser
	case "assistant":
		m.Role = llm.RoleAssistant
	case "system", "developer":
		m.Role = llm.RoleSystem
	case "":
		return m, badRequest(param+".role", "%s.role is required", param)
	default:
		return m, badRequest(param+".role", "%s.role %q is not one of user, assistant, system, developer", param, it.Role)
	}
	if len(it.Content.Raw) == 0 {
		m.Content = it.Content.Text
		return m, nil
	}
	var parts []rsPart
	if it.Content.Raw[0] != '[' || json.Unmarshal(it.Content.Raw, &parts) != nil {
		return m, badRequest(param+".content", "%s.content must be a string or a list of parts", param)
	}
	media := false
	for j := range parts {
		if p, ok := rsMediaPart(&parts[j], n); ok {
			m.Parts = append(m.Parts, p)
			media = true
		} else if text, ok := rsPartText(&parts[j], n); ok {
			m.Parts = append(m.Parts, llm.Part{Kind: llm.PartText, Text: text})
		}
	}
	if !media { // text alone: joined, as the chat surface joins it
		texts := make([]string, len(m.Parts))
		for j, p := range m.Parts {
			texts[j] = p.Text
		}
		m.Content, m.Parts = strings.Join(texts, "\n"), nil
	}
	return m, nil
}

// rsOutputText reads a function_call_output's output: a string, or a list of
// text parts joined by newlines. A part of another kind is a need.
func rsOutputText(c oaContentField, param string, n *needs) (string, *apiError) {
	if len(c.Raw) == 0 {
		return c.Text, nil
	}
	var parts []rsPart
	if c.Raw[0] != '[' || json.Unmarshal(c.Raw, &parts) != nil {
		return "", badRequest(param, "%s must be a string or a list of parts", param)
	}
	texts := make([]string, 0, len(parts))
	for j := range parts {
		if text, ok := rsPartText(&parts[j], n); ok {
			texts = append(texts, text)
		} else if parts[j].Type != "" {
			n.add(parts[j].Type + " in a function_call_output")
		}
	}
	return strings.Join(texts, "\n"), nil
}

// rsPartText returns the text of a text part; a part that is neither text
// nor media is named as a need.
func rsPartText(p *rsPart, n *needs) (string, bool) {
	switch p.Type {
	case "input_text", "output_text", "text":
		return p.Text, true
	case "refusal":
		return p.Refusal, true
	case "input_image", "input_file":
		return "", false
	case "":
		n.add("untyped content")
	default:
		n.add(p.Type + " content")
	}
	return "", false
}

// rsMediaPart reads an input_image (a URL or a data URL) or an input_file
// (an inline PDF), naming what a target must carry for it. A file by id
// or URL is a need no target carries.
func rsMediaPart(p *rsPart, n *needs) (llm.Part, bool) {
	switch p.Type {
	case "input_image":
		if p.FileID != "" {
			n.add(needFile)
			return llm.Part{}, false
		}
		part, ok := oaImagePart(&oaImageURL{URL: p.ImageURL})
		if !ok {
			n.add(needImageUnread)
			return part, false
		}
		n.add(part.Need())
		if p.Detail != "" && p.Detail != "auto" {
			n.add(llm.NeedImageDetail)
		}
		return part, true
	case "input_file":
		part, ok := oaFilePart(&oaFile{FileData: p.FileData, FileID: p.FileID, Filename: p.Filename})
		if !ok || p.FileURL != "" {
			n.add(needFile)
			return llm.Part{}, false
		}
		n.add(part.Need())
		if part.Title != "" {
			n.add(llm.NeedDocumentTitle)
		}
		return part, true
	}
	return llm.Part{}, false
}

// rsToolChoice turns a Responses tool_choice into the canonical (chat
// completions) shape: "auto", "none", "required", or a function by name.
func rsToolChoice(raw json.RawMessage, n *needs) (json.RawMessage, *apiError) {
	raw = present(raw)
	if raw == nil {
		return nil, nil
	}
	var word string
	if json.Unmarshal(raw, &word) == nil {
		switch word {
		case "auto", "none", "required":
			return raw, nil
		}
		return nil, badRequest("tool_choice", "tool_choice %q is not one of auto, none, required", word)
	}
	var obj struct {
		Type string `json:"type"`
		Name string `json:"name"`
	}
	if json.Unmarshal(raw, &obj) != nil {
		return nil, badRequest("tool_choice", "tool_choice must be a string or an object")
	}
	if obj.Type != "function" {
		n.add("tool_choice (" + obj.Type + ")")
		return nil, nil
	}
	if obj.Name == "" {
		return nil, badRequest("tool_choice.name", "tool_choice {type: function} needs a name")
	}
	b := jsonw.String([]byte(`{"type":"function","function":{"name":`), obj.Name)
	return append(b, "}}"...), nil
}

// rsFormatOf turns text.format into the canonical response_format: nil
// for plain text, {"type":"json_object"}, or a json_schema object.
func rsFormatOf(raw json.RawMessage) (json.RawMessage, *apiError) {
	raw = present(raw)
	if raw == nil {
		return nil, nil
	}
	var f rsFormat
	if json.Unmarshal(raw, &f) != nil {
		return nil, badRequest("text.format", "text.format must be an object {type: text | json_object | json_schema}")
	}
	switch f.Type {
	case "text":
		return nil, nil
	case "json_object":
		return json.RawMessage(`{"type":"json_object"}`), nil
	case "json_schema":
		if f.Name == "" || present(f.Schema) == nil {
			return nil, badRequest("text.format", "text.format {type: json_schema} needs a name and a schema")
		}
		js := map[string]any{"name": f.Name, "schema": json.RawMessage(f.Schema)}
		if f.Description != "" {
			js["description"] = f.Description
		}
		if f.Strict != nil {
			js["strict"] = *f.Strict
		}
		b, err := json.Marshal(map[string]any{"type": "json_schema", "json_schema": js})
		if err != nil {
			return nil, badRequest("text.format.schema", "text.format.schema is not valid JSON")
		}
		return b, nil
	}
	return nil, badRequest("text.format.type", "text.format.type %q is not one of text, json_object, json_schema", f.Type)
}
