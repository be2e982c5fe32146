# install.ps1: installs printgate as a Windows service from this folder.
# Run it from an Administrator PowerShell:
#   powershell -ExecutionPolicy Bypass -File .\install.ps1          (asks about each printer found)
#   powershell -ExecutionPolicy Bypass -File .\install.ps1 -Yes     (adds every printer found)
# It copies printgate.exe to %ProgramFiles%\printgate, runs `printgate install`
# (a config with the printers found and a new API token in
# %ProgramData%\printgate, the service with its recovery actions and event-log
# source), then `printgate start`.
#Requires -RunAsAdministrator
param([switch]$Yes)
$ErrorActionPreference = 'Stop'

$dest = Join-Path $env:ProgramFiles 'printgate'
New-Item -ItemType Directory -Force -Path $dest | Out-Null
$exe = Join-Path $dest 'printgate.exe'
$running = Get-Service -Name printgate -ErrorAction SilentlyContinue | Where-Object Status -eq 'Running'
if ($running) { & $exe stop }
Copy-Item -Force (Join-Path $PSScriptRoot 'printgate.exe') $exe

$installArgs = @('install')
if ($Yes) { $installArgs += '--yes' }
& $exe @installArgs
if ($LASTEXITCODE -ne 0) { exit $LASTEXITCODE }

& $exe start
if ($LASTEXITCODE -ne 0) {
	Write-Host "The service is installed but did not start: add a printer to $env:ProgramData\printgate\printgate.toml, then run: & '$exe' start"
	exit $LASTEXITCODE
}
& $exe status
