package printertest

import "strings"

// Copies counts, for every tag, the copies of it on paper: a copy is a line
// of the form "<prefix> <tag>", and it counts as marked when a line
// containing banner came before it, since the previous copy, in the same
// ticket. Tests use it to check the promise that a ticket prints once, or
// again only under a POSSIBLE DUPLICATE banner.
func Copies(tickets []Ticket, prefix, banner string) (plain, marked map[string]int) {
	plain, marked = map[string]int{}, map[string]int{}
	for _, tk := range tickets {
		flag := false
		for _, line := range tk.Lines {
			if strings.Contains(line, banner) {
				flag = true
			}
			if f := strings.Fields(line); len(f) == 2 && f[0] == prefix {
				if flag {
					marked[f[1]]++
				} else {
					plain[f[1]]++
				}
				flag = false
			}
		}
	}
	return plain, marked
}
