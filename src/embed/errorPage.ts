import { randomBytes } from 'node:crypto';
import type { Context } from 'koa';
import type { ProblemRenderer } from '../http/middleware/problems.js';
import type { Problem } from '../http/problem.js';
import { escapeHtml, themes } from './page.js';

const embedPrefix = '/embed/';

/** The Content-Security-Policy of every widget answer: inline CSS and script under a nonce, framing from anywhere. */
export const widgetPolicy = (nonce: string) =>
  `default-src 'none'; script-src 'nonce-${nonce}'; style-src 'nonce-${nonce}'; connect-src 'self'; img-src 'self' data:; ` +
  `base-uri 'none'; form-action 'none'; frame-ancestors *`;

/** A small page in the widget's own look that says what is wrong, for the person looking at the iframe. */
export function widgetErrorPage(problem: Problem, theme: keyof typeof themes, nonce: string): string {
  const colours = themes[theme];
  // A wrong parameter is listed by name; the detail would only say the same again.
  const fixes = (problem.extra.errors ?? []).map((e) => `<li><code>${escapeHtml(e.param)}</code> ${escapeHtml(e.message)}</li>`).join('');
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(problem.title)}</title>
<link rel="icon" href="data:,">
<style nonce="${nonce}">
html,body{margin:0;height:100%}
body{background:${colours.bg};color:${colours.fg};font:12px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;display:flex;flex-direction:column;justify-content:center;padding:8px 12px;min-height:150px;box-sizing:border-box}
h1{font-size:13px;font-weight:600;margin:0 0 4px}
p,ul{margin:0;color:${colours.muted}}ul{padding-left:16px}code{color:${colours.fg}}
</style>
</head>
<body>
<h1>${escapeHtml(problem.title)} (${problem.status})</h1>
${fixes ? `<ul>${fixes}</ul>` : `<p>${escapeHtml(problem.detail)}</p>`}
</body>
</html>
`;
}

/**
 * Widget errors (an unknown station, a wrong parameter, a 429) reach a person in an iframe: they are
 * shown as a page, with the problem's status. A client that asks for JSON first still gets the problem.
 */
export const widgetProblemRenderer: ProblemRenderer = {
  applies: (ctx: Context) =>
    ctx.path.startsWith(embedPrefix) && ctx.accepts('text/html', 'application/problem+json', 'application/json') === 'text/html',
  write: (ctx, problem) => {
    const nonce = randomBytes(16).toString('base64');
    ctx.set('Content-Security-Policy', widgetPolicy(nonce));
    ctx.set('Cache-Control', 'no-store');
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = widgetErrorPage(problem, ctx.query.theme === 'light' ? 'light' : 'dark', nonce);
  },
};
