// host_cpu_test's program: engine/host_cpu.cpp's load-time check built for
// x86-64-v4 (AVX-512), above most CPUs, and a main that says it started.
#include <cstdio>

int main() {
    std::puts("started");
    return 0;
}
