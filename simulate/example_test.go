package simulate_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/detourhq/detour/clock"
	"github.com/detourhq/detour/simulate"
)

func ExampleStart() {
	srv, err := simulate.Start(simulate.Provider{
		Name:   "groq",
		Models: []string{"llama-3.3-70b-versatile"},
		Style:  simulate.StyleGroq,
		Script: []simulate.Fault{
			{Kind: simulate.RateLimit, RetryAfter: 2 * time.Second},
			{Kind: simulate.DailyQuota},
		},
	})
	if err != nil {
		panic(err)
	}
	defer srv.Close()

	body := `{"model":"llama-3.3-70b-versatile","messages":[{"role":"user","content":"hi"}]}`
	for i := 0; i < 3; i++ {
		resp, err := http.Post(srv.BaseURL("groq")+"/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			panic(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Println(resp.StatusCode, resp.Header.Get("Retry-After"), strings.Contains(string(b), "Hello from groq/llama-3.3-70b-versatile."))
	}
	fmt.Println(srv.Stats().Served("groq", "", simulate.OK), "answered")
	// Output:
	// 429 2 false
	// 429 433 false
	// 200  true
	// 1 answered
}

func ExampleServer_Transport() {
	srv, err := simulate.NewServer(simulate.DayProfile(42)...)
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	srv.Clock = clock.NewFake(time.Unix(0, 0)) // latencies cost nothing
	client := &http.Client{Transport: srv.Transport()}

	body := `{"model":"` + simulate.OpenRouterExpensive + `","messages":[{"role":"user","content":"hi"}]}`
	resp, err := client.Post(srv.BaseURL(simulate.OpenRouter)+"/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		panic(err)
	}
	resp.Body.Close()
	fmt.Println(resp.StatusCode)
	// Output: 402
}
