// Package wire is the language of the cloud link: the messages of
// docs/PROTOCOL.md §5 as Go types, with strict encoding and decoding. §5 is
// the contract; this package is its executable form, and a change to one
// is a change to the other.
//
// Every frame is one JSON object with a "type" naming the message. Decode
// turns a frame into the Message of that type and refuses anything §5 does
// not allow: frames over MaxFrameBytes, JSON that is not one object,
// trailing data, unknown types, unknown fields (matched exactly, not by
// case), repeated keys, null values, values of the wrong JSON type and
// messages that miss a required field. Encode is its mirror: it sets
// "type" and refuses a message that Decode would refuse, so an invalid
// message is never sent. Both report a *FrameError whose Code is what the
// link answers in an "error" frame.
//
// A field is required when its zero value is not a legal value: required
// strings are non-empty, required lists hold at least one element, counts
// such as an event's n start at 1. Fields whose zero value is legal
// (hello's outbox depth, an event's attempts) are always written, so a
// frame never relies on a default. Each type's doc comment lists what it
// requires.
//
// The package checks the shape of a message and the closed sets of values
// §5 names (states, results, levels). What a value means is for its
// consumer: a job's task_no grammar, printer name and timeout are judged
// by the intake (§3), a ticket document by the renderer (§4).
//
// The package starts no goroutines and holds no state; it is safe for
// concurrent use.
package wire
