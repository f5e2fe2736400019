/// <reference types="vitest/config" />
import { defineConfig, type Plugin } from 'vite';

// inlineBundle folds the script and the stylesheet into index.html. The
// server mounts the editor at exactly "/", so the page must need no other
// file; one response is also the fastest first load.
function inlineBundle(): Plugin {
  return {
    name: 'ruleagent-inline-bundle',
    enforce: 'post',
    generateBundle(_options, bundle) {
      const html = bundle['index.html'];
      if (!html || html.type !== 'asset') return;
      let page = String(html.source);
      for (const [file, out] of Object.entries(bundle)) {
        if (out.type === 'chunk' && out.isEntry) {
          const code = out.code.replace(/<\/(script)/gi, '<\\/$1');
          page = page.replace(new RegExp(`<script type="module" crossorigin src="[^"]*${escape(file)}"></script>`), () => `<script type="module">${code}</script>`);
          delete bundle[file];
        } else if (out.type === 'asset' && file.endsWith('.css')) {
          const css = String(out.source).replace(/<\/(style)/gi, '<\\/$1');
          page = page.replace(new RegExp(`<link rel="stylesheet" crossorigin href="[^"]*${escape(file)}">`), () => `<style>${css}</style>`);
          delete bundle[file];
        }
      }
      html.source = page;
    },
  };
}

function escape(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

export default defineConfig({
  base: './',
  esbuild: { jsx: 'automatic' },
  build: {
    outDir: 'dist/app',
    emptyOutDir: true,
    modulePreload: false,
    assetsInlineLimit: 100000,
    cssCodeSplit: false,
    rollupOptions: {
      output: { inlineDynamicImports: true },
      // React Flow marks itself "use client" for React Server Components,
      // which a client-only bundle ignores.
      onwarn(w, warn) {
        if (w.code !== 'MODULE_LEVEL_DIRECTIVE') warn(w);
      },
    },
  },
  plugins: [inlineBundle()],
  server: {
    // `npm run dev` against `make run` (or any ruleagent serve).
    proxy: { '/api': { target: 'http://127.0.0.1:8080', ws: true } },
  },
  test: {
    include: ['src/**/*.test.ts', 'src/**/*.test.tsx'],
  },
});
