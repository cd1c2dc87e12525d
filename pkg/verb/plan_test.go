package verb

import "testing"

// TestEarlyApplyMethod: --server-side=true or false decides without the
// record (false never reads it); under auto (or unset), a release Helm 4
// recorded as server-side is read with managedFields and its schemas,
// and one that cannot be read or holds no method is client-side.
func TestEarlyApplyMethod(t *testing.T) {
	for _, tc := range []struct {
		flag              string
		recorded          bool
		lean, fromRecord  bool
		recordNotToBeRead bool
	}{
		{flag: "true", recorded: false, lean: false, fromRecord: false},
		{flag: "true", recorded: true, lean: false, fromRecord: true},
		{flag: "false", recorded: true, lean: true, fromRecord: false, recordNotToBeRead: true},
		{flag: "auto", recorded: false, lean: true, fromRecord: false},
		{flag: "auto", recorded: true, lean: false, fromRecord: true},
		{flag: "", recorded: false, lean: true, fromRecord: false},
		{flag: "", recorded: true, lean: false, fromRecord: true},
	} {
		read := false
		lean, fromRecord := earlyApplyMethod(tc.flag, func() bool { read = true; return tc.recorded })
		if lean != tc.lean || fromRecord != tc.fromRecord {
			t.Errorf("--server-side=%q, recorded %v: lean %v, from the record %v; want %v, %v", tc.flag, tc.recorded, lean, fromRecord, tc.lean, tc.fromRecord)
		}
		if read && tc.recordNotToBeRead {
			t.Errorf("--server-side=%q: the record was read", tc.flag)
		}
	}
}
