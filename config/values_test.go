package config

import (
	"errors"
	"strings"
	"testing"
)

// What a value says when it is wrong names what is wrong with it: a NaN
// or an infinity is not a price, a kind listed twice is a mistake, and a
// zero size names the field's own default.
func TestParse_ValuesSayWhatIsWrong(t *testing.T) {
	const provider = "providers:\n  p: {base_url: \"http://127.0.0.1:9/v1\", key_env: \"\"}\n"
	for _, tt := range []struct {
		name, src, want string
	}{
		{"a NaN price", provider + "targets:\n  p/m: {price: {in: .nan, out: 1}}\n",
			`detour.yaml:4:21: targets["p/m"].price.in: .nan is not a finite number: NaN and infinities are not prices or amounts; write a number like 0.15`},
		{"an infinite price", provider + "targets:\n  p/m: {price: {in: 1, out: -.inf}}\n",
			`targets["p/m"].price.out: -.inf is not a finite number`},
		{"an infinite daily cost", provider + "routes:\n  r: {chain: [p/m], daily_cost_limit: .inf}\n",
			`routes.r.daily_cost_limit: .inf is not a finite number`},
		{"a kind listed twice", provider + "routes:\n  r:\n    chain: [p/m]\n    fail_closed_on: [invalid, policy, invalid]\n",
			`detour.yaml:6:39: routes.r.fail_closed_on[2]: "invalid" is listed twice (first at line 6): list each kind once`},
		{"a kind listed twice in defaults", provider + "defaults:\n  fail_closed_on:\n    - wall\n    - wall\nroutes:\n  r: {chain: [p/m]}\n",
			`detour.yaml:6:7: defaults.fail_closed_on[1]: "wall" is listed twice (first at line 5): list each kind once`},
		{"max_buffer of 0", provider + "routes:\n  r: {chain: [p/m], buffered: true, max_buffer: 0}\n",
			`routes.r.max_buffer: must be more than 0; leave the field out to take the default (4 MiB)`},
		{"max_body of 0", provider + "gateway:\n  max_body: 0\n",
			`gateway.max_body: must be more than 0; leave the field out to take the default (8 MiB)`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("detour.yaml", []byte(tt.src))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Parse:\n got %v\nwant ...%s", err, tt.want)
			}
			if strings.Contains(err.Error(), "got a number") {
				t.Errorf("the problem still says a number is not a number: %v", err)
			}
		})
	}
}

// The admin and metrics keys guard reload, park, release and every
// route's costs: one shorter than MinAdminKeyLen is refused, in check's
// words and serve's, with the variable named and the key never shown.
func TestCheckEnv_WeakAdminKeys(t *testing.T) {
	c := mustParse(t, "gateway:\n  admin_key_env: ADMIN\n  metrics_key_env: METRICS\n")
	env := map[string]string{"ADMIN": "abcd", "METRICS": "0123456789abcde"}
	err := c.CheckEnv(func(k string) string { return env[k] })
	var errs Errors
	if !errors.As(err, &errs) || len(errs) != 2 {
		t.Fatalf("CheckEnv: %v, want two problems", err)
	}
	for i, want := range []string{
		"detour.yaml:2:18: gateway.admin_key_env: ADMIN holds a key of 4 characters, and an admin key must have at least 16",
		"detour.yaml:3:20: gateway.metrics_key_env: METRICS holds a key of 15 characters, and an admin key must have at least 16",
	} {
		if !strings.Contains(errs[i].Error(), want) || !errors.Is(errs[i], ErrWeakKey) {
			t.Errorf("problem %d:\n got %v\nwant ...%s (ErrWeakKey)", i, errs[i], want)
		}
		if strings.Contains(errs[i].Error(), env["ADMIN"]) || strings.Contains(errs[i].Error(), env["METRICS"]) {
			t.Errorf("problem %d shows the key: %v", i, errs[i])
		}
	}
	env = map[string]string{"ADMIN": "0123456789abcdef", "METRICS": "  openssl-rand-hex-16-gives-32  "}
	if err := c.CheckEnv(func(k string) string { return env[k] }); err != nil {
		t.Errorf("keys of 16 characters and more: %v", err)
	}
}
