package ledger

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// allowedFields are the only keys a ledger line may have. A new field must be
// added here on purpose: the ledger never holds prompt or response text, nor
// keys (DESIGN.md rules 7 and 12).
var allowedFields = []string{
	"time", "request_id", "route", "provider", "model", "hop", "attempt",
	"failover", "status", "kind", "scope", "action", "phase", "dropped", "tokens_in", "tokens_out",
	"tokens_cache_read", "tokens_cache_write",
	"seconds", "wait_seconds", "retry_after_s", "cost", "reason", "degraded",
	"upstream_request_id", "pick",
}

// filled returns a Record with every field set to a non-zero value, found by
// reflection so that a field added later is covered too.
func filled(t *testing.T) Record {
	t.Helper()
	var r Record
	v := reflect.ValueOf(&r).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.String:
			f.SetString("x")
		case reflect.Int, reflect.Int64:
			f.SetInt(1)
		case reflect.Float64:
			f.SetFloat(1.5)
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Slice:
			// Dropped: names of request fields ("user"), never their values.
			if f.Type() != reflect.TypeFor[[]string]() {
				t.Fatalf("field %s: unexpected slice type %s", v.Type().Field(i).Name, f.Type())
			}
			f.Set(reflect.ValueOf([]string{"x"}))
		case reflect.Struct:
			if f.Type() != reflect.TypeFor[time.Time]() {
				t.Fatalf("field %s: unexpected struct type %s", v.Type().Field(i).Name, f.Type())
			}
			f.Set(reflect.ValueOf(time.Unix(1, 0)))
		default:
			t.Fatalf("field %s has kind %s: extend filled (and think about what it holds)", v.Type().Field(i).Name, f.Kind())
		}
	}
	return r
}

func TestRecord_FieldNamesAreAllowListed(t *testing.T) {
	b, err := json.Marshal(filled(t))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	var got []string
	for k := range m {
		got = append(got, k)
	}
	slices.Sort(got)
	want := slices.Sorted(slices.Values(allowedFields))
	if !slices.Equal(got, want) {
		t.Fatalf("ledger line fields changed:\n got %v\nwant %v\nA Record must never carry prompt, response or key text.", got, want)
	}
	for _, name := range got {
		for _, bad := range []string{"prompt", "response", "content", "message", "text", "key"} {
			if strings.Contains(name, bad) {
				t.Errorf("field %q looks like it could hold %s", name, bad)
			}
		}
	}
}

func TestRecord_JSON(t *testing.T) {
	cest := time.FixedZone("CEST", 2*3600)
	r := Record{
		Time:      time.Date(2025, 6, 1, 14, 0, 0, 123456789, cest),
		RequestID: "req-1", Route: "default", Provider: "openrouter", Model: "meta-llama/llama-3.3-70b-instruct",
		Hop: 1, Attempt: 2, Failover: true, Status: "http_429", Kind: "transient", Action: "retry", Phase: "sent",
		TokensIn: 10, TokensOut: 0, Seconds: 0.131, WaitSeconds: 2, RetryAfterS: 2, Cost: 0.0000012,
		Reason: `HTTP 429 "rate" <limit> & more`,
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"time":"2025-06-01T12:00:00.123Z","request_id":"req-1","route":"default","provider":"openrouter",` +
		`"model":"meta-llama/llama-3.3-70b-instruct","hop":1,"attempt":2,"failover":true,"status":"http_429",` +
		`"kind":"transient","action":"retry","phase":"sent","tokens_in":10,"tokens_out":0,"seconds":0.131,"wait_seconds":2,` +
		`"retry_after_s":2,"cost":0.0000012,"reason":"HTTP 429 \"rate\" \u003climit\u003e \u0026 more"}`
	if string(b) != want {
		t.Fatalf("Marshal =\n%s\nwant\n%s", b, want)
	}

	var back Record
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	wantBack := r
	wantBack.Time = time.Date(2025, 6, 1, 12, 0, 0, 123000000, time.UTC)
	if !reflect.DeepEqual(back, wantBack) {
		t.Fatalf("round trip =\n%+v\nwant\n%+v", back, wantBack)
	}
}

func TestRecord_OKOmitsRetryAfter(t *testing.T) {
	b, err := json.Marshal(Record{Status: StatusOK, Action: "return"})
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	if strings.Contains(s, "retry_after_s") {
		t.Errorf("zero retry_after_s written: %s", s)
	}
	if !strings.Contains(s, `"kind":""`) || !strings.Contains(s, `"time":"0001-01-01T00:00:00.000Z"`) {
		t.Errorf("ok record = %s", s)
	}
}

func TestSeconds(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want float64
	}{
		{0, 0},
		{131 * time.Millisecond, 0.131},
		{1234567 * time.Microsecond, 1.235},
		{90 * time.Second, 90},
	}
	for _, tt := range tests {
		if got := Seconds(tt.d); got != tt.want {
			t.Errorf("Seconds(%s) = %v, want %v", tt.d, got, tt.want)
		}
	}
}
