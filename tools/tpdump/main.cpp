// tpdump: prints a trace file (work in progress).
int main() {
    return 0;
}
