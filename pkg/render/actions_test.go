package render

import (
	"reflect"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/action"
	action4 "helm.sh/helm/v4/pkg/action"
)

// TestOneMappingForHelm3AndHelm4: the options set on Helm 4's install and
// upgrade actions are the ones set on Helm 3's, field for field, with every
// mapped option given a value other than its zero (a field the mapping
// missed, or a Helm 4 field it does not reach, would differ).
func TestOneMappingForHelm3AndHelm4(t *testing.T) {
	o := Options{
		Devel: true, DisableHooks: true, SkipCRDs: true, SkipSchemaValidation: true, DisableOpenAPIValidation: true,
		Timeout: 42 * time.Second, WaitForJobs: true, SubNotes: true, HideNotes: true,
		Labels: map[string]string{"team": "db"}, EnableDNS: true, TakeOwnership: true, CreateNamespace: true,
		ResetValues: true, ReuseValues: true, ResetThenReuseValues: true, MaxHistory: 7, CleanupOnFail: true,
	}
	inst3, up3 := o.NewInstall(new(action.Configuration), relName, relNS), o.NewUpgrade(new(action.Configuration), relNS)
	inst4, up4 := action4.NewInstall(new(action4.Configuration)), action4.NewUpgrade(new(action4.Configuration))
	o.SetInstall(inst4)
	o.SetUpgrade(up4)
	tests := []struct {
		name       string
		upgrade    bool
		helm3, got interface{}
	}{
		{"install", false, inst3, inst4},
		{"upgrade", true, up3, up4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for name := range o.actionFields(tt.upgrade) {
				want := reflect.ValueOf(tt.helm3).Elem().FieldByName(name).Interface()
				got := reflect.ValueOf(tt.got).Elem().FieldByName(name).Interface()
				if reflect.ValueOf(want).IsZero() {
					t.Errorf("%s: Helm 3's action has the zero value: the case sets no value to compare", name)
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s: Helm 4 %v, Helm 3 %v", name, got, want)
				}
			}
		})
	}
}
