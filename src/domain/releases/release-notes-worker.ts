import { parentPort } from "node:worker_threads";
import { markdownToHtml } from "./release-notes-markdown.js";

// The release notes renderer's thread (release-notes.ts): Markdown in, HTML out.
parentPort?.on("message", (markdown: string) => {
  parentPort?.postMessage(markdownToHtml(markdown));
});
