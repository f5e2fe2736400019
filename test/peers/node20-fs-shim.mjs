// node:fs plus a minimal globSync for patterns like "**/checks.json", the
// only kind @modelcontextprotocol/conformance's tier-check asks for.
export * from "node:fs";
import fs from "node:fs";
import path from "node:path";
export default fs;
export function globSync(pattern, opts = {}) {
  const cwd = opts.cwd ?? process.cwd();
  const base = pattern.replace(/^\*\*\//, "");
  return fs.readdirSync(cwd, { recursive: true })
    .map(String)
    .filter((p) => path.basename(p) === base || p === pattern);
}
