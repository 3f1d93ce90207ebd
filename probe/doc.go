// Package probe checks targets off the billing path, so a parked target
// that answers again gets its traffic back without waiting for a live
// request to risk it.
//
// The check is the cheapest honest one per dialect: the model list
// (OpenAI-compatible: GET /models) or the model's metadata (Anthropic: GET
// /v1/models/{model}; Gemini: GET models/{model}), which cost nothing and
// generate nothing (llm.Prober). Such a read proves the provider answers,
// the key is good and the model is served; it cannot prove that a quota or
// a credit balance is back. So a park it can vouch for (a run of transient
// failures, an outage, a refused key, an unknown model) ends when the read
// succeeds, while a quota or credit wall waits for its reset, unless the
// target's route allows a one-token generation (probe: generate), which is
// billed and so made at most once per Prober.GenerateEvery per target.
//
// A probe takes the health store's probe lease (health.Breaker.BeginProbe)
// before it checks a parked key, so it never races live traffic's
// half-open probe, and every check writes one ledger record (status
// probe_ok or probe_failed, action "probe").
package probe
