package web

import "testing"

// TestSingular ensures a count of one reads in the singular where the
// catalog has a singular form (never "1 jobs taken"), and every
// other count keeps the plural.
func TestSingular(t *testing.T) {
	for _, tc := range []struct {
		jobs, refused uint64 // as the page's printer data holds them
		want          string
	}{
		{1, 0, "1 job taken, 0 refused"},
		{0, 1, "0 jobs taken, 1 refused"},
		{7, 1, "7 jobs taken, 1 refused"},
	} {
		if got := lang(langEN).T("printers.rawjobs", tc.jobs, tc.refused); got != tc.want {
			t.Errorf("T(%d, %d) = %q, want %q", tc.jobs, tc.refused, got, tc.want)
		}
	}
}
