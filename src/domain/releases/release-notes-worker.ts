import { parentPort } from "node:worker_threads";
import { markdownToHtml } from "./release-notes-markdown.js";

// The release notes renderer's thread (release-notes.ts): Markdown in, HTML out.
parentPort?.on("message", ({ id, markdown }: { id: number; markdown: string }) => {
  parentPort?.postMessage({ id, html: markdownToHtml(markdown) });
});
