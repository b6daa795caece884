// ui_check.mjs - the last hop of the end-to-end HTTP path: the web UI that
// `gpufl demo` serves shows, in headless Chromium, the session the workload
// produced.  Prints one JSON line of what it saw; test_e2e.py compares it
// with the API and the logs.  Exit 77 when Chromium or playwright-core is
// missing.
//   node ui_check.mjs URL TOKEN SID SHOT.png
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

const [url, token, sid, shot] = process.argv.slice(2);
const here = path.dirname(fileURLToPath(import.meta.url));
const web = path.join(here, "..", "..", "web");
const chromiumBin = process.env.GPUFL_CHROMIUM ?? "/usr/bin/chromium";
if (!fs.existsSync(chromiumBin)) {
  console.log("SKIP: no Chromium at " + chromiumBin);
  process.exit(77);
}
let chromium;
try {
  ({ chromium } = createRequire(path.join(web, "package.json"))(
    "playwright-core",
  ));
} catch (e) {
  console.log("SKIP: playwright-core missing (make web): " + e.message);
  process.exit(77);
}

const browser = await chromium.launch({
  executablePath: chromiumBin,
  args: [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
  ],
});
const seen = {};
try {
  const page = await browser.newPage({
    viewport: { width: 1400, height: 900 },
  });
  await page.goto(url, { waitUntil: "load" });
  await page.waitForSelector("[data-testid=signin]", { timeout: 15000 });
  seen.signin_first =
    (await page.locator("[data-testid=session-row]").count()) === 0;
  await page.fill("[data-testid=token]", token);
  await page.click("[data-testid=signin-submit]");
  await page.waitForSelector(`[data-testid=session-row][data-sid="${sid}"]`, {
    timeout: 20000,
  });
  const row = page.locator(`[data-testid=session-row][data-sid="${sid}"]`);
  seen.row_text = (await row.innerText()).replace(/\s+/g, " ");
  // the session's kernels: the aggregates tab lists its kernel names
  await page.goto(url.replace(/\/$/, "") + `/#/kernels?s=${sid}`, {
    waitUntil: "load",
  });
  await page.waitForSelector("[data-testid=view-kernels]", { timeout: 20000 });
  // a click that lands while the view is still rendering its first data
  // may be lost (seen once in CI): click the tab again before giving up
  for (let i = 0; ; i++) {
    await page.click("[data-testid=ktab-agg]");
    try {
      await page.waitForSelector("[data-testid=agg-row]", { timeout: 15000 });
      break;
    } catch (e) {
      if (i === 2) throw e;
    }
  }
  seen.agg_rows = await page.locator("[data-testid=agg-row]").allInnerTexts();
  await page.screenshot({ path: shot });
} finally {
  await browser.close();
}
console.log(JSON.stringify(seen));
