package gateway_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/detourhq/detour/config"
	"github.com/detourhq/detour/gateway"
	sim "github.com/detourhq/detour/simulate"
)

func ExampleNew() {
	// Two fake providers on loopback; the first is out of credit.
	up, err := sim.Start(sim.Provider{Name: "cheap", Script: sim.Faults(sim.NoCredits)}, sim.Provider{Name: "steady"})
	if err != nil {
		panic(err)
	}
	defer up.Close()
	cfg, err := config.Parse("detour.yaml", []byte(`
providers:
  cheap:  {base_url: `+up.BaseURL("cheap")+`, key_env: "", pool: credit}
  steady: {base_url: `+up.BaseURL("steady")+`, key_env: "", pool: prepaid}
routes:
  default: {chain: [cheap/llama-3.3-70b, steady/llama-3.3-70b]}
gateway:
  keys:
    app: {key_env: APP_KEY}
`))
	if err != nil {
		panic(err)
	}
	gw, err := gateway.New(gateway.Config{File: cfg, Getenv: func(k string) string {
		return map[string]string{"APP_KEY": "app-secret"}[k]
	}})
	if err != nil {
		panic(err)
	}
	ts := httptest.NewServer(gw) // or: go gw.Serve(listener); gw.Shutdown(ctx)
	defer ts.Close()

	req, _ := http.NewRequest(http.MethodPost, ts.URL+"/v1/chat/completions",
		strings.NewReader(`{"model":"default","messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("Authorization", "Bearer app-secret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(resp.StatusCode, resp.Header.Get("X-Detour-Provider"), resp.Header.Get("X-Detour-Attempts"))
	fmt.Println(strings.Contains(string(body), `Hello from steady/llama-3.3-70b.`))
	// Output:
	// 200 steady 2
	// true
}
