package agent

import "time"

// serialJobTimeout stretches base by the wire time of n bytes at baud (10
// bits a byte), with half again as margin; baud 0 means not serial.
// TEMPORARY until drivers/escpos provides JobTimeout.
func serialJobTimeout(base time.Duration, n, baud int) time.Duration {
	if baud <= 0 {
		return base
	}
	wire := time.Duration(int64(n) * 10 * int64(time.Second) / int64(baud))
	return base + wire*3/2
}
