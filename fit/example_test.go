package fit_test

import (
	"fmt"
	"strings"

	"github.com/detourhq/detour/fit"
	"github.com/detourhq/detour/llm"
)

func ExampleFit() {
	req := &llm.Request{Messages: []llm.Message{{Role: llm.RoleSystem, Content: "Be brief."}}}
	for i := range 20 {
		req.Messages = append(req.Messages,
			llm.Message{Role: llm.RoleUser, Content: fmt.Sprintf("Question %d: %s", i, strings.Repeat("Why does the lamp stay dark at night? ", 40))},
			llm.Message{Role: llm.RoleAssistant, Content: strings.Repeat("The keeper left, and nobody trimmed the wick again. ", 40)})
	}
	req.Messages = append(req.Messages, llm.Message{Role: llm.RoleUser, Content: "Thanks!"})

	n, relErr := fit.Estimate(req, "llama-3.3-70b")
	fmt.Printf("about %d tokens, ±%.0f%%\n", n/1000*1000, 100*relErr)
	fmt.Println(fit.Fits(req, 131072, 4096, "llama-3.3-70b"), fit.Fits(req, 8192, 1024, "llama-3.3-70b"))

	out, did, ok := fit.Fit(req, 8192, 1024, "llama-3.3-70b", &fit.Adaptation{KeepLastTurns: 4})
	fmt.Println(ok, did, len(out.Messages))
	// Output:
	// about 16000 tokens, ±30%
	// true false
	// true [dropped 14 of 21 turns] 14
}
