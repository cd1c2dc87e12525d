package plan

import "time"

// Who ran a revision: the user the API server named, the process that
// called the drop-in helm (an orchestrator), the command line without flag
// values, and in CI the commit and pipeline run. The revision record
// (pkg/releasestate) stores it; `log` (pkg/report) shows it.
type Who struct {
	User     string `json:"user,omitempty"`
	Caller   string `json:"caller,omitempty"`
	Command  string `json:"command,omitempty"`
	Tool     string `json:"tool,omitempty"`
	Commit   string `json:"commit,omitempty"`
	Pipeline string `json:"pipeline,omitempty"`
}

// Event is one run on a revision after its apply: its kind
// (EventRecover, EventUninstall), when, by whom, and what it said it did
// (restored objects, the revision marked failed; what the uninstall
// deleted).
type Event struct {
	Kind string    `json:"kind"`
	At   time.Time `json:"at"`
	By   Who       `json:"by"`
	Line string    `json:"line"`
}

// Kinds of Event: a --recover run that settled the revision, the
// uninstall that ended it (with --keep-history).
const (
	EventRecover   = "recover"
	EventUninstall = "uninstall"
)
