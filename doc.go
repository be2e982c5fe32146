// Package printgate is the root of the store-side printing agent. It holds no
// code of its own: the agent lives in agent/, the spool in spool/, printer
// drivers in drivers/ and the binaries under cmd/. Its tests check rules that
// apply to the whole module, such as every package carrying a doc comment.
package printgate
