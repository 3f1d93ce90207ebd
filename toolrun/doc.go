// Package toolrun runs the tool calls of a model's answer at most once
// each, for library users whose code executes tools: a journal records
// each call planned, started, then succeeded, failed or unknown, keyed by
// the operation, so a call that may have run is never run again, and an
// outcome nobody knows goes to a reconcile hook, never to a model.
//
//	r := &toolrun.Runner{
//		Journal:   &toolrun.RecordsJournal{Records: breaker.RecordsOf()}, // shared with Redis
//		Run:       func(ctx context.Context, c llm.ToolCall) (string, error) { return charge(ctx, c.Arguments) },
//		Reconcile: func(ctx context.Context, op string, c llm.ToolCall) (string, error) { return lookUpCharge(ctx, op) },
//	}
//	msgs, err := r.RunAll(ctx, "order-1234", answer.Message.ToolCalls)
//	// msgs are the tool results to send back with the conversation;
//	// errors.Is(err, toolrun.ErrUnknownOutcome): stop, a person decides.
package toolrun
