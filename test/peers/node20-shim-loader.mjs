// Module loader of node20-shim.mjs: gives the conformance package an "fs"
// that also exports globSync; every other importer gets the real one.
export async function resolve(specifier, context, next) {
  if ((specifier === "fs" || specifier === "node:fs") && context.parentURL?.includes("/@modelcontextprotocol/conformance/")) {
    return { url: new URL("./node20-fs-shim.mjs", import.meta.url).href, shortCircuit: true };
  }
  return next(specifier, context);
}
