// Package e2e holds the end-to-end checks of the Windows build: the real
// printgate.exe run under Wine against the emulated printers of
// drivers/printertest on loopback, one test per check. The package has no
// code of its own; its tests skip unless PRINTGATE_WINE_EXE names the
// printgate.exe to run, as scripts/wine/test-windows.sh (make
// test-windows) does after it made the Wine prefix (WINEPREFIX).
//
// They are Go tests rather than a shell script so that a failure says what
// was expected and what the agent logged, and so that the printers are the
// same emulator every other test uses, running natively beside Wine.
package e2e
