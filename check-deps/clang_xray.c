/* probe: clang -fxray-instrument builds and links */
int f(int x) { return x + 1; }
int main(void) { return f(-1); }
