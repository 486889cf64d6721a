/* The floor of spawn -> initialize (bench/spawn_bench.py): a C program that reads one line from stdin
 * and writes an initialize response of the same shape as dsh-acp's. No parsing, no threads. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(void) {
    char line[65536];
    size_t n = 0;
    ssize_t r;
    while (n < sizeof line && (r = read(0, line + n, sizeof line - n)) > 0) {
        if (memchr(line + n, '\n', (size_t)r)) break;
        n += (size_t)r;
    }
    static const char answer[] =
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"protocolVersion\":1,\"agentCapabilities\":{\"loadSession\":true,"
        "\"promptCapabilities\":{\"image\":false,\"audio\":false,\"embeddedContext\":true},\"mcpCapabilities\":"
        "{\"http\":false,\"sse\":false},\"sessionCapabilities\":{\"list\":{},\"resume\":{},\"close\":{},\"delete\":{}}},"
        "\"authMethods\":[],\"agentInfo\":{\"name\":\"dsh-acp\",\"version\":\"0.1.0\"}}}\n";
    if (write(1, answer, sizeof answer - 1) < 0) return 1;
    /* Like the server: stay until the client closes stdin. */
    while (read(0, line, sizeof line) > 0) {}
    return 0;
}
