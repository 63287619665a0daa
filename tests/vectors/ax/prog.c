/* The program whose variables the agent-expression test vectors read.
   Build: gcc -g -O0 -static prog.c (generate.py does this). Its data live in one section,
   axdata, so generate.py can dump them as the memory image. */
#include <stdint.h>

#define AX __attribute__((section("axdata"), used))

struct inner {
    short s;
    unsigned char bytes[3];
};

struct rec {
    int i;
    unsigned u;
    signed char c;
    unsigned char uc;
    short sh;
    unsigned short ush;
    long l;
    unsigned long ul;
    long long ll;
    unsigned bf_u3 : 3;
    int bf_s5 : 5;
    unsigned bf_u12 : 12;
    int bf_s1 : 1;
    struct inner in;
    struct rec* next;
    const char* name;
};

struct node {
    struct node* next;
    int value;
};

AX int x = 7;
AX int neg = -42;
AX unsigned ux = 0xfffffff0u;
AX long lg = -3000000000L;
AX unsigned long ulg = 0x8000000000000001UL;
AX short sh = -2;
AX unsigned short ush = 65000;
AX signed char sc = -100;
AX unsigned char uc = 200;
AX long long big = 0x123456789abcdefLL;
AX int zero = 0;
AX int arr[6] = {10, -20, 30, -40, 50, -60};
AX short sarr[4] = {-1, 2, -3, 4};
AX char text[16] = "hello";
AX struct rec r1 = {1, 2, -3, 4, -5, 6, -7, 8, -9, 5, -6, 1234, -1, {-77, {1, 2, 3}}, 0, text};
AX struct rec r0 = {-10, 20, 30, 40, 50, 60, 70, 80, 90, 7, 15, 4095, 0, {77, {4, 5, 6}}, &r1, 0};
AX struct rec* pr = &r0;
AX struct node n5 = {0, 5};
AX struct node n4 = {&n5, 4};
AX struct node n3 = {&n4, 3};
AX struct node n2 = {&n3, 2};
AX struct node n1 = {&n2, 1};
AX struct node* head = &n1;
AX int* pint = &arr[2];
AX int** ppint = &pint;

long probe(int a, long b, unsigned char c) {
    int local = a * 3;
    long sum = b + local + c;
    int larr[3] = {a, local, (int)sum};
    sum += larr[1];
    return sum; /* probe-line */
}

int main(void) { return (int)probe(x, lg, uc) & 1; }
