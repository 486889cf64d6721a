#!/usr/bin/env python3
"""Recall quality (issue 29): a labelled set of sessions and questions whose answer session is known.

Builds a store through the server itself (echo model, one ACP session per topic, each with a few
prompts of varied wording, plus distractor sessions that share the common words), then asks every
question through session/list with `_meta: {"dsh-acp/query": ...}` (the server's search: the index of
the configured store) and reports how often the right session is in the top 3 and first. Target:
top 3 for >= 90% of the questions.

Usage: recall_quality.py SERVER [--store-url postgresql://...]  (default: a temporary file store)
"""
import json
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_common import EchoServer, result  # noqa: E402

# (what the session said, a question someone asks later). The questions reuse some of the
# session's words and not others, as people remember a name or two and the gist.
TOPICS = [
    (["For the upload client we settled the retry policy: three attempts, exponential backoff from 200 ms.",
      "Jitter stays on so the uploads do not stampede after an outage."],
     "what did we decide about the retry policy for uploads"),
    (["The logo colour is teal from now on; the banner stays grey.", "Marketing signed off on the teal logo."],
     "which colour did we pick for the logo"),
    (["Postgres partitions for the billing tables: monthly ranges, detached after 18 months.",
      "The invoice archive job reads the detached partitions."],
     "how are the billing tables partitioned"),
    (["We pinned OpenSSL to 3.0 in the release image because 3.2 broke the FIPS provider."],
     "why is openssl pinned in the release image"),
    (["The flaky websocket test was a race between close and the heartbeat timer; fixed by cancelling the timer first."],
     "what caused the flaky websocket test"),
    (["Rate limiting for the public API: token bucket, 100 requests per minute per key, burst 20."],
     "what rate limit does the public api use"),
    (["The mobile app stores refresh tokens in the Keychain on iOS and EncryptedSharedPreferences on Android."],
     "where does the mobile app keep refresh tokens"),
    (["Feature flags move from the YAML file to LaunchDarkly next quarter; the YAML loader is deprecated."],
     "are we moving feature flags to launchdarkly"),
    (["The search page debounce is 250 milliseconds; 100 hammered the backend."],
     "what debounce interval did we choose for the search page"),
    (["Kubernetes liveness probes hit /healthz every 10 seconds with a 3 second timeout."],
     "how often do the liveness probes run"),
    (["Timezone bug: the scheduler stored local times; everything is UTC now and converted at display."],
     "how did we fix the scheduler timezone bug"),
    (["Dependabot runs weekly on Mondays, grouped minor updates, security updates immediately."],
     "when does dependabot open pull requests"),
    (["The CSV export streams rows in pages of 5000 to keep memory flat for huge accounts."],
     "why does the csv export use pages"),
    (["Password hashing switched from bcrypt to argon2id with 64 MiB memory and 3 iterations."],
     "which password hashing algorithm and parameters"),
    (["Onboarding emails: day 0 welcome, day 3 tips, day 14 survey; unsubscribe honoured across all."],
     "what is the schedule of onboarding emails"),
    (["The GraphQL gateway caps query depth at 7 and complexity at 1000."],
     "what depth limit does the graphql gateway enforce"),
    (["Image thumbnails are generated with libvips at 320 and 1280 pixels, WebP with JPEG fallback."],
     "which library makes the thumbnails"),
    (["Database backups: nightly base backup plus WAL archiving to S3, restore drill every quarter."],
     "how are database backups done"),
    (["We dropped Redux for Zustand in the dashboard; the store is split per feature."],
     "what replaced redux in the dashboard"),
    (["The on-call rotation is weekly, handover Tuesday 10:00, with a secondary for escalations."],
     "when is the on-call handover"),
    (["Log retention: application logs 30 days, audit logs 7 years in cold storage."],
     "how long do we keep audit logs"),
    (["The CDN caches static assets for a year with content hashes; HTML is never cached."],
     "how long does the cdn cache static assets"),
    (["Webhook deliveries are signed with HMAC-SHA256 and a timestamp; receivers reject older than 5 minutes."],
     "how are webhooks signed"),
    (["Monorepo build uses Bazel remote cache; local builds fall back to disk cache."],
     "does the monorepo use a remote build cache"),
    (["The PDF invoices are rendered with headless Chromium, fonts embedded, A4 and Letter."],
     "how do we render pdf invoices"),
    (["Sessions expire after 30 minutes idle and 12 hours absolute; remember-me extends to 30 days."],
     "what is the idle session timeout"),
    (["Kafka topic for orders has 12 partitions keyed by customer id; retention 7 days."],
     "how many partitions does the orders kafka topic have"),
    (["Accessibility audit: contrast fixes on buttons, focus rings restored, alt text on product images."],
     "what came out of the accessibility audit"),
    (["The Terraform state lives in S3 with DynamoDB locking, one state per environment."],
     "where is terraform state stored"),
    (["Currency rounding uses banker's rounding only in reports; invoices round half up per line."],
     "how do invoices round currency"),
    (["The chat widget loads lazily after first interaction to save 180 KB on landing pages."],
     "why is the chat widget loaded lazily"),
    (["Search relevance: title boosted 3x, description 1x, stale listings decayed after 90 days."],
     "how much is the title boosted in search relevance"),
    (["Email bounces over 5 percent pause a campaign automatically."],
     "when are email campaigns paused for bounces"),
    (["The ML model for fraud scoring retrains weekly on the last 90 days; threshold 0.82."],
     "what threshold does fraud scoring use"),
    (["Secrets move from environment files to Vault with short-lived database credentials."],
     "where do secrets live now"),
    (["The iOS minimum version is 16; Android minSdk 26."],
     "what is the minimum ios version we support"),
    (["Error budget policy: a burned budget freezes feature releases until reliability work lands."],
     "what happens when the error budget is burned"),
    (["The cron that purges soft-deleted users runs at 03:15 UTC and keeps 30 days."],
     "when does the soft deleted user purge run"),
    (["Localization: strings in ICU MessageFormat, German and Japanese first, pseudo-locale in CI."],
     "which languages come first for localization"),
    (["The warehouse sync uses Fivetran every hour; dbt models build at the half hour."],
     "how often does the warehouse sync"),
    (["We chose gRPC for service-to-service calls and keep REST for the public API."],
     "grpc or rest between services"),
    (["Load test target: 2000 requests per second at p99 under 300 ms before launch."],
     "what was the load test target before launch"),
    (["Cookie consent banner defaults to reject for analytics in the EU."],
     "what does the cookie consent banner default to"),
    (["The nightly e2e suite runs on three browsers: Chromium, Firefox and WebKit."],
     "which browsers does the nightly e2e suite cover"),
    (["Data retention for deleted accounts: personal data erased in 30 days, invoices kept 10 years."],
     "what happens to personal data of deleted accounts"),
    (["The API versioning scheme is a date header, not a URL prefix."],
     "how do we version the api"),
    (["Git branching: trunk-based with short-lived branches; release branches only for hotfixes."],
     "what is our git branching model"),
    (["Code review needs one approval, two for migrations touching production data."],
     "how many approvals do migrations need"),
    (["The geocoding provider is Mapbox; Google Maps only for Street View embeds."],
     "which geocoding provider do we use"),
    (["Mobile push notifications batch at most one per hour per user for marketing."],
     "how often can marketing push notifications be sent"),
    (["The design system tokens live in a JSON file compiled to CSS variables and Swift constants."],
     "how are design system tokens distributed"),
    (["Uptime monitoring pings from five regions; two failing regions page the on-call."],
     "when does uptime monitoring page someone"),
    (["The legacy SOAP endpoint is shut down on 1 March; partners migrated to the REST endpoint."],
     "when is the legacy soap endpoint shut down"),
    (["Invoice numbering is per legal entity, gapless, prefixed with the year."],
     "how are invoice numbers formatted"),
    (["Profiling showed JSON serialisation dominating; we switched the hot path to a streaming encoder."],
     "what did profiling show about serialisation"),
]

# Sessions that share the common words (decide, policy, tests, build, api, database) and no answer.
DISTRACTORS = [
    "We should decide later which tests to write first.",
    "The build was slow today; nothing decided.",
    "Quick question about the api docs formatting.",
    "Database connection strings are in the usual place.",
    "Policy documents need a review by legal at some point.",
    "Let us talk about the release next week.",
    "The dashboard has a typo in the header.",
    "Meeting notes: nothing new, same priorities.",
    "Can you rename this variable to something clearer?",
    "Refactor the utils module into smaller files.",
    "The mobile team is on holiday next week.",
    "Please summarise the open pull requests.",
    "Look at the failing lint job on main.",
    "The staging environment is down again.",
    "Draft a changelog entry for the minor release.",
    "What time is the planning meeting?",
    "Add a unit test for the parser edge case.",
    "Update the README with the new install steps.",
    "Search for usages of the deprecated helper.",
    "Timeouts in the integration tests again.",
]


class Client(EchoServer):
    def call(self, method, params):
        rid = self.send(method, params)
        for line in self.lines(time.monotonic() + 60):
            msg = json.loads(line)
            if msg.get("id") == rid and "method" not in msg:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg["result"]
        raise RuntimeError("the server closed its output")


def main():
    server = sys.argv[1]
    extra = []
    if "--store-url" in sys.argv:
        extra = ["--store", sys.argv[sys.argv.index("--store-url") + 1]]
    home = tempfile.mkdtemp(prefix="dsh-acp-recall-")
    cwd = os.path.join(home, "proj")
    os.makedirs(cwd)
    try:
        c = Client(server, home, extra, stderr=subprocess_devnull())
        c.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        truth = []
        for messages, question in TOPICS:
            sid = c.call("session/new", {"cwd": cwd, "mcpServers": []})["sessionId"]
            for m in messages:
                c.call("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": m}]})
            truth.append((question, sid))
        for d in DISTRACTORS:
            sid = c.call("session/new", {"cwd": cwd, "mcpServers": []})["sessionId"]
            c.call("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": d}]})
        top1 = top3 = 0
        misses = []
        t0 = time.monotonic()
        for question, sid in truth:
            listed = c.call("session/list", {"_meta": {"dsh-acp/query": question}})["sessions"]
            ids = [s["sessionId"] for s in listed]
            top1 += ids[:1] == [sid]
            top3 += sid in ids[:3]
            if sid not in ids[:3]:
                misses.append(question)
        elapsed = (time.monotonic() - t0) / len(truth)
        n = len(truth)
        print(f"recall quality: {n} questions over {n + len(DISTRACTORS)} sessions "
              f"({'PostgreSQL' if extra else 'file store'})")
        print(f"  right session first: {top1}/{n} ({100 * top1 / n:.0f}%)")
        print(f"  right session in the top 3: {top3}/{n} ({100 * top3 / n:.0f}%)  target >= 90%")
        print(f"  mean time per question through session/list: {1000 * elapsed:.1f} ms")
        for q in misses:
            print(f"  missed: {q}")
        store = "pg" if extra else "file"
        result(f"recall_top3_{store}", round(100 * top3 / n, 1), "%")
        result(f"recall_top1_{store}", round(100 * top1 / n, 1), "%")
        c.proc.stdin.close()
        c.proc.wait()
        return 0 if top3 >= 0.9 * n else 1
    finally:
        shutil.rmtree(home, ignore_errors=True)


def subprocess_devnull():
    return open(os.devnull, "wb")


if __name__ == "__main__":
    sys.exit(main())
