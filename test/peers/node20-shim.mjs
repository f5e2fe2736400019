// node20-shim: lets @modelcontextprotocol/conformance 0.1.16 start on Node 20.
// It imports fs.globSync (Node 22+) at top level, though only its tier-check
// command uses it. Load with: node --import ./node20-shim.mjs ...
// On Node 22 and later the shim is not needed (and the tests do not load it).
import { register } from "node:module";
register("./node20-shim-loader.mjs", import.meta.url);
