package drivers

func discoverUSB() ([]Found, error) {
	list, err := ListUSBLP("/sys")
	return foundUSBLP(list), err
}
