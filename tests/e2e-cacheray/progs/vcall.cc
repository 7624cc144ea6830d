// vcall: a C++ class hierarchy with virtual functions (the instrumentation stores the vtable
// pointer through __tsan_vptr_update and, with clang, loads it through __tsan_vptr_read).
// Each object's vtable pointer must be written (constructors) and read (virtual calls).
#include <cstdio>

struct Shape {
	virtual double area() const = 0;
	virtual ~Shape()
	{
	}
};

struct Square : Shape {
	double s;
	explicit Square(double x) : s(x)
	{
	}
	double area() const override
	{
		return s * s;
	}
};

struct Rect : Shape {
	double w, h;
	Rect(double a, double b) : w(a), h(b)
	{
	}
	double area() const override
	{
		return w * h;
	}
};

__attribute__((noinline)) double total(Shape *const *v, int n)
{
	double t = 0;
	for (int i = 0; i < n; i++)
		t += v[i]->area();
	return t;
}

int main()
{
	Shape *v[3] = {new Square(2), new Rect(2, 3), new Square(1)};
	double t = total(v, 3);
	for (int i = 0; i < 3; i++)
		std::printf("EXPECT tag=0x01 size=8 lo=%p hi=%p min=1\n"
			    "EXPECT tag=0x00 size=8 lo=%p hi=%p min=1\n",
			    (void *)v[i], (void *)((char *)v[i] + 8), (void *)v[i],
			    (void *)((char *)v[i] + 8));
	for (int i = 0; i < 3; i++)
		delete v[i];
	return t == 11.0 ? 0 : 1;
}
