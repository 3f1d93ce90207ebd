// Package cli holds detour's commands (ask, check, explain, report, demo, serve) on cobra.
// Main runs one command line and returns the process exit code, so the whole
// CLI is testable in-process with its own stdin, stdout, stderr and env.
//
//	code := cli.Main(ctx, []string{"ask", "Say hi"}, cli.Env{})
package cli
