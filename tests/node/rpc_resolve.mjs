// A module resolution hook for @anycable/serverless-js 0.1.0: its published `dist/` is ESM
// ("type": "module") written with directory imports (`from './rpc'`), which Node's ESM loader
// refuses. The hook resolves such a relative specifier to `<dir>/index.js` (or `<file>.js`),
// for that package's own files only; everything else resolves as Node resolves it.
import { existsSync, statSync } from "node:fs";
import { fileURLToPath } from "node:url";

export async function resolve(specifier, context, next) {
  const parent = context.parentURL ?? "";
  if (specifier.startsWith(".") && parent.includes("/@anycable/serverless-js/")) {
    const base = new URL(specifier, parent);
    const path = fileURLToPath(base);
    if (existsSync(path) && statSync(path).isDirectory()) {
      return next(new URL(`${base.href}/index.js`).href, context);
    }
    if (!existsSync(path) && existsSync(`${path}.js`)) {
      return next(`${base.href}.js`, context);
    }
  }
  return next(specifier, context);
}
