/* probe: the compiler accepts -fsanitize=thread (compile only: hooks come from our runtime) */
int f(int x) { return x + 1; }
int main(void) { return f(-1); }
