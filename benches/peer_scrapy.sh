#!/usr/bin/env bash
# Crawl a running simcrawl test web with Scrapy (the peer people would pick),
# as a plain CrawlSpider: robots.txt obeyed, 64 concurrent requests, no delay.
#
# Usage: benches/peer_scrapy.sh SEEDS_FILE MAX_PAGES OUT_JSON
#   SEEDS_FILE  seed URLs, one per line (http://HOST.test:PORT/...)
#   OUT_JSON    receives {"pages": N, "wall_s": W, "cpu_s": C}
# Scrapy is installed from PyPI into a throwaway venv (cached in
# target/peer-venv). Host names under .test resolve to 127.0.0.1.
set -euo pipefail
seeds=$1; max_pages=$2; out=$3
here=$(cd "$(dirname "$0")" && pwd)
venv="${SIMCRAWL_PEER_VENV:-$here/../target/peer-venv}"
if [ ! -x "$venv/bin/scrapy" ]; then
  python3 -m venv "$venv" >&2
  "$venv/bin/pip" install --quiet --disable-pip-version-check 'scrapy>=2.11' >&2
fi
export PYTHONPATH="$here${PYTHONPATH:+:$PYTHONPATH}"
"$venv/bin/python" - "$seeds" "$max_pages" "$out" <<'PY'
import json, os, resource, sys, time
from scrapy.crawler import CrawlerProcess
from scrapy.linkextractors import LinkExtractor
from scrapy.spiders import CrawlSpider, Rule
from scrapy.resolver import CachingThreadedResolver

seeds_file, max_pages, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
seeds = [l.strip() for l in open(seeds_file) if l.strip() and not l.startswith("#")]

class TestResolver(CachingThreadedResolver):
    """Every *.test host is the local test web."""
    def getHostByName(self, name, timeout=()):
        if name.lower().endswith(".test"):
            from twisted.internet import defer
            return defer.succeed("127.0.0.1")
        return super().getHostByName(name, timeout)

class PeerSpider(CrawlSpider):
    name = "peer"
    start_urls = seeds
    rules = (Rule(LinkExtractor(), callback="parse_item", follow=True),)
    pages = 0
    def parse_start_url(self, response):
        return self.parse_item(response)
    def parse_item(self, response):
        PeerSpider.pages += 1
        return None

proc = CrawlerProcess(settings={
    "ROBOTSTXT_OBEY": True,
    "CONCURRENT_REQUESTS": 64,
    "CONCURRENT_REQUESTS_PER_DOMAIN": 64,
    "DOWNLOAD_DELAY": 0,
    "CLOSESPIDER_PAGECOUNT": max_pages,
    "LOG_LEVEL": "WARNING",
    "TELNETCONSOLE_ENABLED": False,
    "DNS_RESOLVER": "__main__.TestResolver",
    "RETRY_ENABLED": False,
    "REDIRECT_ENABLED": True,
    "DOWNLOAD_TIMEOUT": 10,
    "HTTPERROR_ALLOW_ALL": True,
})
t0 = time.time(); r0 = resource.getrusage(resource.RUSAGE_SELF)
proc.crawl(PeerSpider)
proc.start()
r1 = resource.getrusage(resource.RUSAGE_SELF); t1 = time.time()
cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
json.dump({"pages": PeerSpider.pages, "wall_s": t1 - t0, "cpu_s": cpu}, open(out, "w"))
print(json.dumps({"pages": PeerSpider.pages, "wall_s": round(t1 - t0, 3), "cpu_s": round(cpu, 3)}))
PY
