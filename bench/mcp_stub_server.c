/* A stdio MCP server that starts in about a millisecond, for the MCP start figure of
 * bench/tools_bench.py: the time a session/new spends on it is then ours, not an interpreter's.
 * One JSON-RPC message a line; answers initialize (with the client's protocol version), tools/list
 * (one tool, "ok"), tools/call ("fine") and ping; ignores notifications. Not a JSON parser: it
 * finds the "id" and "method" members by their text, which is enough for our client's frames.
 * Exits when stdin closes. */
#include <stdio.h>
#include <string.h>

/* The text of member `key`'s value (a number, or a string with its quotes), into out. */
static int member(const char *line, const char *key, char *out, size_t cap) {
    char pattern[64];
    snprintf(pattern, sizeof pattern, "\"%s\":", key);
    const char *at = strstr(line, pattern);
    if (!at) return 0;
    at += strlen(pattern);
    while (*at == ' ') at++;
    size_t n = 0;
    if (*at == '"') {
        out[n++] = *at++;
        while (*at && *at != '"' && n + 2 < cap) out[n++] = *at++;
        out[n++] = '"';
    } else {
        while (*at && *at != ',' && *at != '}' && n + 1 < cap) out[n++] = *at++;
    }
    out[n] = 0;
    return n > 0;
}

int main(void) {
    static char line[1 << 16];
    char id[128], method[128], version[128];
    while (fgets(line, sizeof line, stdin)) {
        if (!member(line, "id", id, sizeof id) || !member(line, "method", method, sizeof method)) continue;
        if (strcmp(method, "\"initialize\"") == 0) {
            if (!member(line, "protocolVersion", version, sizeof version)) strcpy(version, "\"2025-06-18\"");
            printf("{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"protocolVersion\":%s,\"capabilities\":{\"tools\":{}},"
                   "\"serverInfo\":{\"name\":\"stub\",\"version\":\"0\"}}}\n", id, version);
        } else if (strcmp(method, "\"tools/list\"") == 0) {
            printf("{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"tools\":[{\"name\":\"ok\",\"description\":\"Answers fine\","
                   "\"inputSchema\":{\"type\":\"object\"}}]}}\n", id);
        } else if (strcmp(method, "\"tools/call\"") == 0) {
            printf("{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"fine\"}]}}\n", id);
        } else if (strcmp(method, "\"ping\"") == 0) {
            printf("{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{}}\n", id);
        } else {
            printf("{\"jsonrpc\":\"2.0\",\"id\":%s,\"error\":{\"code\":-32601,\"message\":\"method not found\"}}\n", id);
        }
        fflush(stdout);
    }
    return 0;
}
