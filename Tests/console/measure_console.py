"""Measures the console in Chromium (not a test; BENCHMARKS.md records its output with the command): for each page,
the bytes transferred (the document, the stylesheet, the script) and the time to first contentful paint, from the
browser's Performance API, over a cold load (empty cache) and a warm one. Run by `Tests/console/run.sh --measure`."""

import json
import os

from playwright.sync_api import sync_playwright

BASE = os.environ["CONSOLE_BASE_URL"]
PAGES = {
    "sign-in": "/console/sign-in",
    "broadcasts": "/console/broadcasts",
    "broadcast (live)": f"/console/broadcasts/{os.environ['CONSOLE_BROADCAST_ID']}",
    "plan": "/console/plan",
    "apps": "/console/apps",
    "workers": "/console/workers",
}
MEASURE = """() => {
  const nav = performance.getEntriesByType('navigation')[0];
  const resources = performance.getEntriesByType('resource').filter(r => !r.name.includes('/live'));
  const paint = performance.getEntriesByName('first-contentful-paint')[0];
  return {
    documentBytes: nav.transferSize, documentBodyBytes: nav.decodedBodySize,
    resourceBytes: resources.reduce((sum, r) => sum + r.transferSize, 0),
    resources: resources.length,
    firstContentfulPaintMs: paint ? Math.round(paint.startTime) : null,
    domContentLoadedMs: Math.round(nav.domContentLoadedEventEnd),
  };
}"""


def main():
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
        for mobile in (False, True):
            context = browser.new_context(viewport={"width": 375, "height": 740} if mobile else {"width": 1280, "height": 900})
            page = context.new_page()
            page.goto(BASE + "/console/sign-in")
            page.fill("input[name=token]", os.environ["CONSOLE_VIEWER_TOKEN"])
            page.click("button[type=submit]")
            page.wait_for_url(BASE + "/console/broadcasts")
            for warm in (False, True):
                for name, path in PAGES.items():
                    if not warm:
                        context.clear_cookies() if name == "sign-in" else None
                        page.context.new_cdp_session(page).send("Network.clearBrowserCache")
                    page.goto(BASE + path, wait_until="load")
                    result = page.evaluate(MEASURE)
                    result.update(page=name, cache="warm" if warm else "cold", viewport="375px" if mobile else "1280px")
                    print(json.dumps(result))
                    if name == "sign-in" and not warm:
                        page.fill("input[name=token]", os.environ["CONSOLE_VIEWER_TOKEN"])
                        page.click("button[type=submit]")
                        page.wait_for_url(BASE + "/console/broadcasts")
            context.close()
        browser.close()


if __name__ == "__main__":
    main()
