package link

import (
	"reflect"
	"testing"
	"time"

	"printgate/spool"
	"printgate/sync/wire"
)

// eventsGolden is the events frame the link sent for goldenEvents before
// the wire had an event type of its own, when it put spool.Event on the
// wire as it was. It was produced by that code and is kept byte for byte.
const eventsGolden = `{"type":"events","batch":"b7","events":[{"task_no":"ORD20261130-0042_KITCHEN_v1","n":3,"state":"PRINTED","reason":"NO_ACK <&> 打印","printer":"kitchen","target":"bar","confirmation":"consumed","attempts":2,"possible_duplicate":true,"origin":"manager","at":"2026-11-30T23:59:59.999999999-09:30","job":{"printer":"kitchen","priority":"urgent","origin":"manager","size":1048576,"sha256":"2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae"}},{"task_no":"A-1","n":1,"state":"ACCEPTED","printer":"kitchen","attempts":0,"origin":"local","at":"2026-11-30T12:00:05Z","job":{"printer":"kitchen","priority":"","origin":"local","size":0,"sha256":"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"}},{"task_no":"A-1","n":2,"state":"QUEUED","printer":"kitchen","attempts":0,"origin":"cloud","at":"2026-11-30T12:00:05.25Z"}]}`

// goldenEvents are outbox events of every shape: every field set (with
// characters JSON could escape, a zone offset and nanoseconds), a job
// summary with its zero fields, and an event with no optional field.
var goldenEvents = []spool.Event{
	{TaskNo: "ORD20261130-0042_KITCHEN_v1", N: 3, State: spool.StatePrinted, Reason: "NO_ACK <&> 打印", Printer: "kitchen",
		Target: "bar", Confirmation: spool.ConfirmConsumed, Attempts: 2, PossibleDuplicate: true, Origin: spool.OriginManager,
		At:  time.Date(2026, 11, 30, 23, 59, 59, 999999999, time.FixedZone("", -9*3600-30*60)),
		Job: &spool.JobInfo{Printer: "kitchen", Priority: spool.PriorityUrgent, Origin: spool.OriginManager, Size: 1 << 20, SHA256: "2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae"}},
	{TaskNo: "A-1", N: 1, State: spool.StateAccepted, Printer: "kitchen", Origin: spool.OriginLocal, At: time.Date(2026, 11, 30, 12, 0, 5, 0, time.UTC),
		Job: &spool.JobInfo{Printer: "kitchen", Origin: spool.OriginLocal, SHA256: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"}},
	{TaskNo: "A-1", N: 2, State: spool.StateQueued, Printer: "kitchen", Origin: spool.OriginCloud, At: time.Date(2026, 11, 30, 12, 0, 5, 250_000_000, time.UTC)},
}

// TestWireEventGolden ensures an outbox event goes on the wire exactly as
// it did when the link sent the spool's record itself: the conversion to
// wire.Event changes no byte of the events frame.
func TestWireEventGolden(t *testing.T) {
	b := &wire.Events{Batch: "b7"}
	for _, ev := range goldenEvents {
		b.Events = append(b.Events, wireEvent(ev))
	}
	got, err := wire.Encode(b)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != eventsGolden {
		t.Fatalf("events frame\n got %s\nwant %s", got, eventsGolden)
	}
}

// TestWireEventCarriesEveryField ensures the conversion fills every field
// of wire.Event and of its job summary from an event that sets them all,
// so a field added to the wire type cannot be left out of the conversion.
func TestWireEventCarriesEveryField(t *testing.T) {
	full := goldenEvents[0]
	full.Seq = 42 // after the golden frame: events then carried no seq
	ev := wireEvent(full)
	for _, v := range []reflect.Value{reflect.ValueOf(ev), reflect.ValueOf(*ev.Job)} {
		for i := range v.NumField() {
			if v.Field(i).IsZero() {
				t.Errorf("%s.%s is not set by wireEvent", v.Type().Name(), v.Type().Field(i).Name)
			}
		}
	}
}
