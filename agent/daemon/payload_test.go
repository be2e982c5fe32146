package daemon

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"image"
	"image/png"
	"strings"
	"testing"
	"time"

	"printgate/agent/api"
	"printgate/spool"
	"printgate/sync/cloudtest"
	"printgate/sync/wire"
)

// TestCloudJobEndingInsideCommandRejected runs the service against the
// reference cloud: a cloud job whose payload ends inside a
// command (GS ( k declaring 256 more bytes) is answered job_ack rejected
// bad_payload naming the command and its offset; a task_no already known
// sent again with such a payload is refused as another ticket's
// (task_no_other_content), and with the same payload is the duplicate it is.
func TestCloudJobEndingInsideCommandRejected(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end over loopback")
	}
	r := startCloudRig(t, cloudtest.Options{}, "", 60*time.Second)
	cloud, agentID, limit := r.cloud, r.agentID, r.limit
	cut := append([]byte("TICKET\n"), 0x1d, 0x28, 0x6b, 0x00, 0x01)
	for _, j := range []wire.Job{
		{TaskNo: "CUT_v1", Printer: "k", Payload: cut},
		{TaskNo: "OK_v1", Printer: "k", Payload: []byte("TICKET OK\n\x1dV\x00")},
		{TaskNo: "OK_v1", Printer: "k", Payload: cut},
		{TaskNo: "OK_v1", Printer: "k", Payload: []byte("TICKET OK\n\x1dV\x00")},
	} {
		if err := cloud.Queue(agentID, j); err != nil {
			t.Fatal(err)
		}
	}
	acks, err := cloud.WaitAcks(limit, agentID, 4)
	if err != nil {
		t.Fatal(err)
	}
	if a := acks[0]; a.TaskNo != "CUT_v1" || a.Result != wire.ResultRejected || a.Error == nil || a.Error.Code != api.CodeBadPayload ||
		!strings.Contains(a.Error.Message, "GS ( k at offset 7") {
		t.Errorf("cut payload: ack %+v (error %+v), want rejected bad_payload naming GS ( k at offset 7", a, a.Error)
	}
	if a := acks[1]; a.TaskNo != "OK_v1" || a.Result != wire.ResultAccepted {
		t.Errorf("whole payload: ack %+v (error %+v), want accepted", a, a.Error)
	}
	if a := acks[2]; a.TaskNo != "OK_v1" || a.Result != wire.ResultRejected || a.Error == nil || a.Error.Code != api.CodeTaskNoOtherContent {
		t.Errorf("a known task_no with a cut payload: ack %+v (error %+v), want rejected task_no_other_content", a, a.Error)
	}
	if a := acks[3]; a.TaskNo != "OK_v1" || a.Result != wire.ResultDuplicate || a.Error != nil || a.State == "" || a.State == spool.StateCanceled {
		t.Errorf("resend of a known task_no, same payload: ack %+v (error %+v), want duplicate", a, a.Error)
	}
}

// TestCloudJobOffAllowListRejected runs the service against the reference
// cloud: a job whose payload carries a command the agent cannot frame
// (ESC Z, a clone's QR whose firmware reads 65,535 bytes more) is answered
// job_ack rejected bad_payload naming it, and a document whose images add
// up to more than a document may hold is rejected bad_document, both
// before they take a printer's turn.
func TestCloudJobOffAllowListRejected(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end over loopback")
	}
	r := startCloudRig(t, cloudtest.Options{}, "", 60*time.Second)
	cloud, agentID, limit := r.cloud, r.agentID, r.limit
	img := image.NewGray(image.Rect(0, 0, 2048, 2048))
	for i := range img.Pix {
		img.Pix[i] = 0xFF
	}
	var png1 bytes.Buffer
	if err := png.Encode(&png1, img); err != nil {
		t.Fatal(err)
	}
	line := fmt.Sprintf(`{"image":%q}`, base64.StdEncoding.EncodeToString(png1.Bytes()))
	heavy := `{"lines":[` + strings.Repeat(line+",", 4) + line + `]}`
	for _, j := range []wire.Job{
		{TaskNo: "QR_v1", Printer: "k", Payload: []byte("TICKET\n\x1bZ\x00L\x06\xff\xff")},
		{TaskNo: "HEAVY_v1", Printer: "k", Document: []byte(heavy)},
	} {
		if err := cloud.Queue(agentID, j); err != nil {
			t.Fatal(err)
		}
	}
	acks, err := cloud.WaitAcks(limit, agentID, 2)
	if err != nil {
		t.Fatal(err)
	}
	if a := acks[0]; a.TaskNo != "QR_v1" || a.Result != wire.ResultRejected || a.Error == nil || a.Error.Code != api.CodeBadPayload ||
		!strings.Contains(a.Error.Message, "ESC Z at offset 7") {
		t.Errorf("ESC Z payload: ack %+v (error %+v), want rejected bad_payload naming ESC Z at offset 7", a, a.Error)
	}
	if a := acks[1]; a.TaskNo != "HEAVY_v1" || a.Result != wire.ResultRejected || a.Error == nil || a.Error.Code != api.CodeBadDocument ||
		!strings.Contains(a.Error.Message, "images add up to") {
		t.Errorf("heavy document: ack %+v (error %+v), want rejected bad_document", a, a.Error)
	}
}
