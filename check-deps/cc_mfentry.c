/* probe: the compiler accepts -pg -mfentry (calls __fentry__ first thing) */
int f(int x) { return x + 1; }
int main(void) { return f(-1); }
