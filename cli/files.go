package cli

import (
	"github.com/detourhq/detour/config"
	"github.com/detourhq/detour/health"
	"github.com/detourhq/detour/internal/samefile"
)

// stateFiles are the files a command that routes writes besides its own
// outputs: the ledger (ledgerFlag as --ledger reads it) and the SQLite
// health store's file (def as openHealth takes it), the ledger first.
// A store that is not a file, or a health.store that does not read
// (openHealth says why), adds none.
func stateFiles(cfg *config.Config, env Env, def health.StoreKind, ledgerFlag string) []samefile.File {
	out := []samefile.File{{What: "the ledger", Path: ledgerPath(ledgerFlag, env),
		Fix: `set --ledger or $DETOUR_LEDGER to another file ("-" for none)`}}
	if spec, err := healthSpec(cfg, env, def, ledgerFlag); err == nil && spec.Kind == health.StoreSQLite {
		out = append(out, samefile.File{What: "the health store", Path: spec.Path,
			Fix: "set health.store (or $DETOUR_HEALTH_STORE) to sqlite:ANOTHER-FILE"})
	}
	return out
}

// configInput is the config file, read; none when the config came from
// presets.
func configInput(cfg *config.Config) samefile.File {
	return samefile.File{What: "the config file", Path: cfg.File}
}

// checkFiles refuses a run in which a file to write (outputs, in order)
// is a file to read (inputs) or another file to write, however the two
// are spelled (samefile.Check): a usage error, before anything is opened
// for writing, so nothing is truncated.
func checkFiles(outputs []samefile.File, inputs ...samefile.File) error {
	if err := samefile.Check(outputs, inputs); err != nil {
		return withCode(ExitUsage, err)
	}
	return nil
}
