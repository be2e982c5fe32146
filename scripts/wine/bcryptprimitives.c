/*
 * A stand-in bcryptprimitives.dll for Wine 8, which has none. Go >= 1.24
 * on Windows calls ProcessPrng from it at start and exits without it.
 * ProcessPrng is BCryptGenRandom with the system RNG, which Wine has.
 * Built at test time by scripts/wine/setup.sh with x86_64-w64-mingw32-gcc;
 * for tests under Wine only, never shipped.
 */
#include <windows.h>
#include <bcrypt.h>

BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len)
{
	while (len > 0) {
		ULONG n = len > 0x40000000 ? 0x40000000 : (ULONG)len;
		if (BCryptGenRandom(NULL, data, n, BCRYPT_USE_SYSTEM_PREFERRED_RNG) != 0)
			return FALSE;
		data += n;
		len -= n;
	}
	return TRUE;
}
