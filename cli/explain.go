package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/detourhq/detour/classify"
	"github.com/detourhq/detour/config"
	"github.com/detourhq/detour/health"
	"github.com/detourhq/detour/ledger"
	"github.com/detourhq/detour/llm"
	"github.com/detourhq/detour/policy"
	"github.com/detourhq/detour/wire/anthropic"
	"github.com/detourhq/detour/wire/gemini"
	"github.com/detourhq/detour/wire/openai"
	"github.com/detourhq/detour/wire/responses"
)

// Explanation is what detour makes of one provider response.
type Explanation struct {
	Kind   classify.Kind `json:"kind"`
	Status string        `json:"status"`
	// Scope is how far the failure reaches: attempt, target, account or
	// endpoint.
	Scope classify.Scope `json:"scope"`
	// RetryAfterS is the wait the response implies, in seconds; null when
	// it names none.
	RetryAfterS *float64 `json:"retry_after_s"`
	// ParkUntil is when the target would be tried again, when parked.
	ParkUntil *time.Time `json:"park_until,omitempty"`
	// ParkDefault is set when the response names no reset, so the park
	// lasts health.wall_cooldown (ParkUntil is now plus its default).
	ParkDefault bool   `json:"park_default,omitempty"`
	Action      string `json:"action"`
	Why         string `json:"why"`
	Reason      string `json:"reason"`
	Detail      string `json:"detail,omitempty"`
	// StatusAlone is set when only the HTTP status decided the kind: the
	// body held no code or message detour knows (the reason says so too).
	StatusAlone bool `json:"status_alone,omitempty"`
	// UpstreamRequestID is the provider's own id of the exchange (its
	// x-request-id, request-id, cf-ray, ... header, or a request_id in the
	// body): what its support desk asks for, and the ledger's
	// upstream_request_id.
	UpstreamRequestID string `json:"upstream_request_id,omitempty"`
}

func newExplain(env Env) *cobra.Command {
	var provider string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "explain [--provider NAME] [--json] [FILE]",
		Short: "Say what detour makes of one provider response",
		Long: `explain reads one provider response as 'curl -si' prints it (status line,
headers, blank line, body) from FILE or stdin, and says what detour makes of
it: the failure kind, the wait or park-until it implies, the action the router
takes, and the one-line reason it records. It runs the same code as the router.

A 200 whose body is an SSE stream counts too: an error frame inside it, or a
stream cut before its end, is explained like any failure.`,
		Example: `  curl -si https://api.groq.com/openai/v1/chat/completions ... > resp.txt
  detour explain resp.txt
  detour explain --json < resp.txt`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			in := env.Stdin
			if len(args) == 1 && args[0] != "-" {
				f, err := os.Open(args[0])
				if err != nil {
					return withCode(ExitUsage, err)
				}
				defer f.Close()
				in = f
			}
			raw, err := io.ReadAll(io.LimitReader(in, 32<<20))
			if err != nil {
				return withCode(ExitUsage, err)
			}
			now := time.Now()
			ex, err := Explain(raw, provider, now)
			if err != nil {
				return withCode(ExitUsage, err)
			}
			if asJSON {
				enc := json.NewEncoder(env.Stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(ex)
			}
			printExplanation(env.Stdout, ex, now)
			return nil
		},
	}
	cmd.Flags().StringVar(&provider, "provider", "", "provider the response came from: a preset name (anthropic, gemini, groq, openai-responses, ...) or a dialect (openai, anthropic, gemini, openai-responses); selects how the body is read (default openai-compatible)")
	cmd.Flags().BoolVar(&asJSON, "json", false, `print {"kind", "retry_after_s", "action", "reason", ...} as JSON`)
	return cmd
}

// Explain reads one raw HTTP response (curl -si) and explains it at now.
func Explain(raw []byte, provider string, now time.Time) (*Explanation, error) {
	resp, err := ReadResponse(raw)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	_, derr := decoderFor(provider)(resp)
	if derr == nil {
		return &Explanation{Status: ledger.StatusOK, Action: string(policy.Return), Why: "a complete answer",
			Reason: "success: nothing to explain"}, nil
	}
	return ExplainError(derr, now), nil
}

// decoderFor returns the response decoder of provider's dialect: the
// dialect of the preset of that name (anthropic, gemini, groq, ...), or the
// dialect named directly; anything else is OpenAI-compatible.
func decoderFor(provider string) func(*http.Response) (*llm.Response, error) {
	d := config.Dialect(provider)
	if ps, ok := config.LookupPreset(provider); ok {
		d = ps.Dialect
	}
	switch d {
	case config.Anthropic:
		return anthropic.DecodeResponse
	case config.Gemini:
		return gemini.DecodeResponse
	case config.OpenAIResponses:
		return responses.DecodeResponse
	}
	return openai.DecodeResponse
}

// ExplainError explains one attempt's error as the router would take it on
// the first send of a request with another candidate left (of the same
// family, declaring no context window: one a context overflow may move
// on to).
func ExplainError(err error, now time.Time) *Explanation {
	f := classify.Classify(err, now)
	d := policy.Decide(policy.Input{
		Failure: f, Phase: policy.PhaseSent, Budget: policy.Interactive(),
		Now: now, Started: now, Attempts: 1, TargetAttempts: 1,
		Next: policy.Next{Exists: true, SameFamily: true, LargerContext: true}, Jitter: 0,
	})
	ex := &Explanation{Kind: f.Kind, Status: f.Status, Scope: f.Scope, Action: string(d.Action), Why: d.Why, Reason: f.Reason, Detail: f.Detail,
		StatusAlone: f.StatusAlone}
	if f.RetryAfter > 0 {
		s := f.RetryAfter.Seconds()
		ex.RetryAfterS = &s
	}
	if d.Park || f.Kind == classify.Wall {
		until := d.ParkUntil
		if until.IsZero() {
			until = f.Until
		}
		if until.IsZero() {
			// what health.Breaker.Park does with no reset named
			until, ex.ParkDefault = now.Add(health.DefaultWallCooldown), true
		}
		u := until.UTC()
		ex.ParkUntil = &u
	}
	ex.UpstreamRequestID = llm.ProviderRequestIDOfError(err)
	return ex
}

var http2Status = regexp.MustCompile(`^HTTP/(2|3) `)

// ReadResponse parses a response as curl -si prints it: optional interim
// responses (1xx, proxy "Connection established"), then status line,
// headers, blank line, body. HTTP/2 and HTTP/3 status lines are accepted.
func ReadResponse(raw []byte) (*http.Response, error) {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	for {
		if !bytes.HasPrefix(raw, []byte("HTTP/")) {
			return nil, errors.New("input is not an HTTP response: expected a status line such as 'HTTP/1.1 429 Too Many Requests' (capture it with curl -si)")
		}
		raw = http2Status.ReplaceAll(raw, []byte("HTTP/${1}.0 "))
		resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(raw)), nil)
		if err != nil {
			return nil, fmt.Errorf("reading the response: %w", err)
		}
		if resp.StatusCode >= 200 && !isConnectEstablished(raw) {
			body, _ := io.ReadAll(resp.Body)
			resp.Body = io.NopCloser(bytes.NewReader(bodyAfterHeaders(raw, body)))
			return resp, nil
		}
		// Interim response: skip to the next status line.
		i := bytes.Index(raw, []byte("\n\r\n"))
		j := bytes.Index(raw, []byte("\n\n"))
		switch {
		case i >= 0 && (j < 0 || i < j):
			raw = raw[i+3:]
		case j >= 0:
			raw = raw[j+2:]
		default:
			return nil, errors.New("input holds only an interim response")
		}
		raw = bytes.TrimLeft(raw, " \t\r\n")
	}
}

func isConnectEstablished(raw []byte) bool {
	line, _, _ := bytes.Cut(raw, []byte("\n"))
	return bytes.Contains(bytes.ToLower(line), []byte("connection established"))
}

// bodyAfterHeaders returns the body as captured. http.ReadResponse honours
// Content-Length, which a hand-edited capture may get wrong; the capture's
// own bytes win.
func bodyAfterHeaders(raw, parsed []byte) []byte {
	for _, sep := range [][]byte{[]byte("\r\n\r\n"), []byte("\n\n")} {
		if i := bytes.Index(raw, sep); i >= 0 {
			return raw[i+len(sep):]
		}
	}
	return parsed
}

// printExplanation writes ex for people; now is when it was made.
func printExplanation(w io.Writer, ex *Explanation, now time.Time) {
	fmt.Fprintf(w, "kind:    %s\n", orDash(string(ex.Kind)))
	fmt.Fprintf(w, "status:  %s\n", ex.Status)
	fmt.Fprintf(w, "scope:   %s (%s)\n", orDash(string(ex.Scope)), scopeHelp(ex.Scope))
	if ex.RetryAfterS != nil {
		fmt.Fprintf(w, "wait:    %s\n", time.Duration(*ex.RetryAfterS*float64(time.Second)).Round(time.Millisecond))
	}
	if ex.ParkUntil != nil {
		fmt.Fprintf(w, "parked:  until %s\n", parkTime(*ex.ParkUntil, now))
		if ex.ParkDefault {
			fmt.Fprintf(w, "         the response names no reset, so the park lasts health.wall_cooldown (%s unless the config sets it)\n",
				health.DefaultWallCooldown)
		}
	}
	fmt.Fprintf(w, "action:  %s (%s)\n", ex.Action, ex.Why)
	fmt.Fprintf(w, "reason:  %s\n", ex.Reason)
	if ex.StatusAlone {
		fmt.Fprintf(w, "basis:   %s: no code or message in the body is one detour knows; the kind\n         is what %s usually means, not something the provider said.\n",
			classify.StatusAloneNote, strings.TrimPrefix(ex.Status, "http_"))
	}
	if ex.Detail != "" && ex.Detail != ex.Reason {
		fmt.Fprintf(w, "message: %s\n", ex.Detail)
	}
	if ex.UpstreamRequestID != "" {
		fmt.Fprintf(w, "request: %s (the provider's id of this exchange: give it to its support desk)\n", ex.UpstreamRequestID)
	}
	fmt.Fprintln(w, actionHelp(ex))
}

// parkTime writes the end of a park as the CLI shows it, in UTC: the
// time and zone when it is less than a day from now ("23:54:12 UTC (in
// 5m3s)"), the date too when it is further ("2026-12-02 23:54:12 UTC (in
// 26h0m0s)"), so a daily quota's reset is never mistaken for today's.
func parkTime(until, now time.Time) string {
	layout := "15:04:05 MST"
	d := until.Sub(now)
	if d >= 24*time.Hour || d <= -24*time.Hour {
		layout = "2006-01-02 15:04:05 MST"
	}
	s := until.UTC().Format(layout)
	switch d = d.Round(time.Second); {
	case d > 0:
		s += " (in " + d.String() + ")"
	case d < 0:
		s += " (" + (-d).String() + " ago)"
	}
	return s
}

func actionHelp(ex *Explanation) string {
	switch policy.Action(ex.Action) {
	case policy.Retry:
		return "=> detour retries this target after the wait, within the request's budget."
	case policy.Failover, policy.Fallback:
		if ex.Kind == classify.Wall || ex.ParkUntil != nil {
			return "=> detour parks this target (no sends until the time above) and moves to the next candidate at once."
		}
		return "=> detour moves to the next candidate at once."
	case policy.Fail:
		return "=> detour fails closed: the same request would fail everywhere, or must not be routed around."
	}
	return ""
}

// scopeHelp says what a scope parks and skips.
func scopeHelp(s classify.Scope) string {
	switch s {
	case classify.ScopeTarget:
		return "this model at this provider; its other models stay eligible"
	case classify.ScopeAccount:
		return "every target that uses this provider's key"
	case classify.ScopeEndpoint:
		return "every target on this host"
	}
	return "this attempt only"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
