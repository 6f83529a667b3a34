/* Prints the highest x86-64 psABI level (2 or 3; 0 below 2) that this CPU
   runs, for cmake/HostArch.cmake's ORRERY_HOST_ARCH=auto. Built and run at
   configure time on the building machine, with the compiler's default
   instruction set, so it runs anywhere. */
#include <stdio.h>

int main(void) {
    __builtin_cpu_init();
#if defined(__clang__) || (defined(__GNUC__) && __GNUC__ < 12)
    /* The features the levels name that __builtin_cpu_supports knows everywhere. */
    int v2 = __builtin_cpu_supports("ssse3") && __builtin_cpu_supports("sse4.1") && __builtin_cpu_supports("sse4.2") &&
             __builtin_cpu_supports("popcnt");
    int v3 = v2 && __builtin_cpu_supports("avx") && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
             __builtin_cpu_supports("bmi") && __builtin_cpu_supports("bmi2");
#else
    int v2 = __builtin_cpu_supports("x86-64-v2"), v3 = __builtin_cpu_supports("x86-64-v3");
#endif
    printf("%d\n", v3 ? 3 : v2 ? 2 : 0);
    return 0;
}
