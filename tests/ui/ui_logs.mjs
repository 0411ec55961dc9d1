// Reads a flow run's log lines on its page in the Prefect UI, as a person opening the link `m1` prints
// would: tests/ui/test_prefect_ui.py runs a command on its own temporary Prefect server, starts `m1 ui`
// over the database that server wrote, and hands this script the run's id and lines it logged.
//
//   node ui_logs.mjs BASE_URL FLOW_RUN_ID SCREENSHOT_DIR TEXT...
//
// Prints one line per check; exits non-zero with the failed check (and a screenshot) otherwise.
import { chromium } from 'playwright-core';

const [base, runId, shots, ...texts] = process.argv.slice(2);

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
let page;
try {
  page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  page.setDefaultTimeout(45_000);  // a busy 2-core machine
  await page.goto(`${base}/runs/flow-run/${runId}`);
  const logsTab = page.getByText('Logs', { exact: true }).first();  // the run page's first tab
  await logsTab.waitFor();
  await logsTab.click();
  const none = page.getByText(/didn't generate logs|no logs/i).first();
  for (const text of texts) {
    const line = page.getByText(text, { exact: false }).first();
    try {
      await line.waitFor();
    } catch (err) {
      if (!String(err).includes('Timeout')) throw err;
      await page.reload();  // the page loaded while the database was busy: once more, as a person would
      await logsTab.click();
      await line.or(none).first().waitFor();
      if (!(await line.isVisible())) {
        throw new Error(`the run's Logs tab does not show "${text}": `
          + `"${(await none.innerText().catch(() => '')).trim()}"`);
      }
    }
    console.log(`ok: the run's page shows the log line "${(await line.innerText()).trim().slice(0, 120)}"`);
  }
  await page.screenshot({ path: `${shots}/run-logs.png`, fullPage: true });
} catch (err) {
  if (page) await page.screenshot({ path: `${shots}/run-logs-failure.png`, fullPage: true }).catch(() => {});
  console.error(`ui-logs failed: ${err.message ?? err}`);
  process.exitCode = 1;
} finally {
  await browser.close();
}
