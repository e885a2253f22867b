// ragstrata web page: ask a question, stream the answer (server-sent events over fetch, so the
// API key travels in a header), show citations as cards with the quoted sentence highlighted,
// refusals clearly, and each retriever's rank. Text from documents is only ever inserted with
// textContent (never innerHTML), so a document cannot inject markup into the page.
"use strict";

const $ = (id) => document.getElementById(id);
const KEY_STORAGE = "ragstrata.apiKey";

// ------------------------------------------------------------------ language
// The page speaks the browser's language when it is Spanish, English otherwise; answers and
// refusals come from the server in the question's language.
const STRINGS = {
  en: {
    apiKey: "API key",
    useKey: "Use key",
    collection: "Collection",
    question: "Question",
    askPlaceholder: "Ask a question about your documents",
    ask: "Ask",
    noAnswer: "No answer found.",
    sources: "Sources",
    explain: "Explain retrieval: each retriever's rank",
    colSource: "source > heading",
    colFused: "fused score",
    colDense: "dense rank / cosine",
    colBm25: "BM25 rank / score",
    addDocuments: "Add documents",
    uploadCollection: "collection (e.g. docs)",
    upload: "Upload",
    enterKey: "Enter an API key to start.",
    noCollection: "No collection yet: add documents below.",
    document: "document",
    documents: "documents",
    tenant: "tenant",
    notVerified: "not verified",
    notVerifiedTitle: "The sentence citing this source was not found to be supported by it.",
    chars: "chars",
    denseRank: "dense rank",
    bm25Rank: "BM25 rank",
    chooseCollection: "Choose a collection first.",
    searching: "Searching…",
    answering: "Answering…",
    doneIn: "Done in {ms} ms.",
    done: "Done.",
    tokens: "{generator}: {prompt} prompt + {completion} answer tokens.",
    disagree: "Sources disagree across versions; used the newest ({kept}).",
    error: "Error",
    chooseUpload: "Choose a collection name and files.",
    jobProgress: "{state}: {done}/{total} files, {chunks} chunks",
    uploadDone: "Upload {state}.",
    failed: "failed",
    indexed: "indexed",
    notIndexed: "not indexed (the server stopped): upload it again",
    connectionLost: "Lost contact with the server; still trying…",
    page: "p. {n}",
    pages: "pp. {a}-{b}",
    state_queued: "queued",
    state_running: "running",
    state_succeeded: "succeeded",
    state_partial: "partly indexed",
    state_failed: "failed",
    state_cancelled: "cancelled",
  },
  es: {
    apiKey: "Clave de API",
    useKey: "Usar clave",
    collection: "Colección",
    question: "Pregunta",
    askPlaceholder: "Haz una pregunta sobre tus documentos",
    ask: "Preguntar",
    noAnswer: "No se encontró respuesta.",
    sources: "Fuentes",
    explain: "Explicar la búsqueda: el puesto de cada buscador",
    colSource: "fuente > sección",
    colFused: "puntuación fusionada",
    colDense: "puesto denso / coseno",
    colBm25: "puesto BM25 / puntuación",
    addDocuments: "Añadir documentos",
    uploadCollection: "colección (p. ej. docs)",
    upload: "Subir",
    enterKey: "Introduce una clave de API para empezar.",
    noCollection: "Aún no hay colecciones: añade documentos abajo.",
    document: "documento",
    documents: "documentos",
    tenant: "inquilino",
    notVerified: "sin verificar",
    notVerifiedTitle: "No se comprobó que esta fuente respalde la frase que la cita.",
    chars: "caracteres",
    denseRank: "puesto denso",
    bm25Rank: "puesto BM25",
    chooseCollection: "Elige primero una colección.",
    searching: "Buscando…",
    answering: "Respondiendo…",
    doneIn: "Hecho en {ms} ms.",
    done: "Hecho.",
    tokens: "{generator}: {prompt} tokens de prompt + {completion} de respuesta.",
    disagree: "Las versiones de las fuentes no coinciden; se usó la más reciente ({kept}).",
    error: "Error",
    chooseUpload: "Elige un nombre de colección y archivos.",
    jobProgress: "{state}: {done}/{total} archivos, {chunks} fragmentos",
    uploadDone: "Subida: {state}.",
    failed: "falló",
    indexed: "indexado",
    notIndexed: "sin indexar (el servidor se detuvo): vuelve a subirlo",
    connectionLost: "Se perdió la conexión con el servidor; reintentando…",
    page: "pág. {n}",
    pages: "págs. {a}-{b}",
    state_queued: "en cola",
    state_running: "en curso",
    state_succeeded: "completada",
    state_partial: "completada en parte",
    state_failed: "fallida",
    state_cancelled: "cancelada",
  },
};

function pageLanguage() {
  for (const tag of navigator.languages || [navigator.language || "en"]) {
    const base = String(tag).toLowerCase().split("-")[0];
    if (base in STRINGS) return base;
  }
  return "en";
}

const LANG = pageLanguage();

function t(key, vars) {
  const text = STRINGS[LANG][key] ?? STRINGS.en[key] ?? key;
  return text.replace(/\{(\w+)\}/g, (_, name) => String((vars || {})[name] ?? ""));
}

function translatePage() {
  document.documentElement.lang = LANG;
  for (const el of document.querySelectorAll("[data-i18n]")) el.textContent = t(el.dataset.i18n);
  for (const el of document.querySelectorAll("[data-i18n-placeholder]")) {
    el.placeholder = t(el.dataset.i18nPlaceholder);
  }
}

function apiKey() {
  return sessionStorage.getItem(KEY_STORAGE) || "";
}

function headers(extra) {
  return Object.assign({ Authorization: "Bearer " + apiKey() }, extra || {});
}

async function errorMessage(response) {
  try {
    const body = await response.json();
    if (body && body.error) return `${body.error.code}: ${body.error.message}`;
  } catch (_) {
    // not JSON
  }
  return `HTTP ${response.status}`;
}

function setStatus(text) {
  $("status").textContent = text;
}

async function loadCollections() {
  const select = $("collection");
  if (!apiKey()) {
    setStatus(t("enterKey"));
    return;
  }
  const response = await fetch("/v1/collections", { headers: headers() });
  if (!response.ok) {
    setStatus(await errorMessage(response));
    return;
  }
  const data = await response.json();
  const previous = select.value;
  select.replaceChildren();
  for (const c of data.collections) {
    const option = document.createElement("option");
    option.value = c.name;
    const noun = c.documents === 1 ? t("document") : t("documents");
    option.textContent = `${c.name} (${c.documents} ${noun})`;
    select.append(option);
  }
  if (previous) select.value = previous;
  $("tenant").textContent = `${t("tenant")}: ${data.tenant}`;
  setStatus(data.collections.length ? "" : t("noCollection"));
}

// ------------------------------------------------------------------ server-sent events
async function* readEvents(response) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      let event = "message";
      const data = [];
      for (const line of block.split("\n")) {
        if (line.startsWith("event:")) event = line.slice(6).trim();
        else if (line.startsWith("data:")) data.push(line.slice(5).trimStart());
      }
      yield { event, data: JSON.parse(data.join("\n")) };
    }
  }
}

// ------------------------------------------------------------------ rendering
function resetAnswer() {
  delete document.body.dataset.state;
  $("answer-box").hidden = false;
  $("answer").textContent = "";
  $("answer").hidden = false;
  $("refusal").hidden = true;
  $("refusal-text").textContent = "";
  $("citations").replaceChildren();
  $("citations-title").hidden = true;
  $("explain").hidden = true;
  $("explain-table").tBodies[0].replaceChildren();
}

function clearAnswer() {
  // another collection: the answer on screen was about the previous one
  resetAnswer();
  $("answer-box").hidden = true;
  setStatus("");
}

function where(item) {
  // source > heading path, and the PDF page(s) when the item has them: character offsets
  // mean nothing in a PDF viewer
  const heading = (item.heading_path || []).join(" > ");
  const place = heading ? `${item.source} > ${heading}` : item.source;
  const a = item.page_start;
  const b = item.page_end;
  if (a === null || a === undefined) return place;
  const page = b === null || b === undefined || b === a ? t("page", { n: a }) : t("pages", { a, b });
  return `${place} (${page})`;
}

function jobState(state) {
  return t(`state_${state}`);
}

function rankText(explain, name) {
  const e = explain && explain[name];
  return e ? `${e.rank} / ${e.score.toFixed(3)}` : "-";
}

function citationCard(c) {
  const card = document.createElement("article");
  card.className = "citation-card";
  card.id = `citation-${c.label}`;
  card.dataset.label = String(c.label);

  const head = document.createElement("header");
  const label = document.createElement("span");
  label.className = "label";
  label.textContent = `[${c.label}]`;
  const source = document.createElement("span");
  source.className = "source";
  source.textContent = where(c);
  head.append(label, " ", source);
  if (c.verified === false) {
    // an LLM claim citing this source was not supported by it (docs/generation.md)
    const flag = document.createElement("span");
    flag.className = "unverified";
    flag.textContent = t("notVerified");
    flag.title = t("notVerifiedTitle");
    head.append(" ", flag);
  }

  const passage = document.createElement("blockquote");
  passage.className = "passage";
  if (c.highlight_start !== null && c.highlight_end !== null) {
    // the offsets count code points (Python's); a JS string counts UTF-16 units, so each
    // emoji before the quote shifted the mark by one (trial 40)
    const chars = Array.from(c.passage);
    const mark = document.createElement("mark");
    mark.className = "cited";
    mark.textContent = chars.slice(c.highlight_start, c.highlight_end).join("");
    passage.append(
      chars.slice(0, c.highlight_start).join(""),
      mark,
      chars.slice(c.highlight_end).join(""),
    );
  } else if (c.passage) {
    // the quote is not in the passage as written (an LLM's paraphrase): the passage, unmarked
    passage.append(c.passage);
  } else {
    const mark = document.createElement("mark");
    mark.className = "cited";
    mark.textContent = c.quote;
    passage.append(mark);
  }

  const foot = document.createElement("footer");
  foot.className = "ranks muted";
  foot.textContent =
    `${t("chars")} ${c.start}-${c.end} · ${t("denseRank")} ${rankText(c.explain, "dense")}` +
    ` · ${t("bm25Rank")} ${rankText(c.explain, "bm25")}`;
  card.append(head, passage, foot);
  return card;
}

function renderAnswerLabels(text, labels) {
  // the streamed plain text becomes text with [n] linked to its citation card: only a label
  // the answer cites (labels), not after a word character (a quoted arr[2] or a document's
  // own reference [11] is text, trial 40)
  const answer = $("answer");
  answer.replaceChildren();
  let previous = "";
  for (const part of text.split(/(\[\d+\])/)) {
    const m = /^\[(\d+)\]$/.exec(part);
    const cited = m && (!labels || labels.has(Number(m[1]))) && !/[\p{L}\p{N}_]$/u.test(previous);
    if (part) previous = part;
    if (cited) {
      const link = document.createElement("a");
      link.href = `#citation-${m[1]}`;
      link.className = "cite-ref";
      link.textContent = part;
      answer.append(link);
    } else if (part) {
      answer.append(part);
    }
  }
}

function renderExplain(hits) {
  const body = $("explain-table").tBodies[0];
  for (const h of hits) {
    const row = body.insertRow();
    for (const value of [
      String(h.rank),
      where(h),
      h.score.toFixed(4),
      rankText(h.explain, "dense"),
      rankText(h.explain, "bm25"),
    ]) {
      row.insertCell().textContent = value;
    }
  }
  $("explain").hidden = false;
}

// ------------------------------------------------------------------ ask
async function ask(event) {
  event.preventDefault();
  const question = $("question").value.trim();
  const collection = $("collection").value;
  if (!question) return;
  if (!collection) {
    setStatus(t("chooseCollection"));
    return;
  }
  resetAnswer();
  $("ask").disabled = true;
  setStatus(t("searching"));
  try {
    const response = await fetch(`/v1/collections/${encodeURIComponent(collection)}/ask`, {
      method: "POST",
      headers: headers({ "Content-Type": "application/json", Accept: "text/event-stream" }),
      body: JSON.stringify({ question, stream: true, explain: true }),
    });
    if (!response.ok) {
      setStatus(await errorMessage(response));
      $("answer-box").hidden = true;
      document.body.dataset.state = "error";
      return;
    }
    let text = "";
    for await (const { event: name, data } of readEvents(response)) {
      if (name === "token") {
        text += data.text;
        $("answer").textContent = text;
        setStatus(t("answering"));
      } else if (name === "citations") {
        for (const c of data.citations) $("citations").append(citationCard(c));
        $("citations-title").hidden = data.citations.length === 0;
      } else if (name === "explain") {
        renderExplain(data.hits);
      } else if (name === "done") {
        if (data.refusal) {
          $("answer").hidden = true;
          $("refusal-text").textContent = data.answer;
          $("refusal").hidden = false;
          document.body.dataset.state = "refused";
        } else {
          renderAnswerLabels(data.answer, new Set((data.citations || []).map((c) => c.label)));
          document.body.dataset.state = "answered";
        }
        const total = data.timings_ms && data.timings_ms.total;
        let status = total ? t("doneIn", { ms: Math.round(total) }) : t("done");
        if (data.usage) {
          status += " " + t("tokens", {
            generator: data.generator,
            prompt: data.usage.prompt_tokens,
            completion: data.usage.completion_tokens,
          });
        }
        if (data.conflict) {
          const kept = (data.conflicts || []).map((c) => c.kept).join(", ");
          status += " " + t("disagree", { kept });
        }
        setStatus(status);
      } else if (name === "error") {
        // the stream broke off after it started (e.g. the LLM server failed)
        setStatus(`${data.error.code}: ${data.error.message}`);
        document.body.dataset.state = "error";
      }
    }
  } catch (err) {
    setStatus(`${t("error")}: ${err}`);
    document.body.dataset.state = "error";
  } finally {
    $("ask").disabled = false;
  }
}

// ------------------------------------------------------------------ upload
async function upload(event) {
  event.preventDefault();
  const collection = $("upload-collection").value.trim() || $("collection").value;
  const files = $("upload-files").files;
  if (!collection || !files.length) {
    $("upload-status").textContent = t("chooseUpload");
    return;
  }
  const form = new FormData();
  for (const f of files) form.append("files", f, f.name);
  $("upload").disabled = true;
  try {
    const response = await fetch(`/v1/collections/${encodeURIComponent(collection)}/documents`, {
      method: "POST",
      headers: headers(),
      body: form,
    });
    if (!response.ok) {
      $("upload-status").textContent = await errorMessage(response);
      return;
    }
    let job = await response.json();
    let lost = 0;
    while (!["succeeded", "partial", "failed", "cancelled"].includes(job.state)) {
      const p = job.progress;
      if (!lost) {
        $("upload-status").textContent = t("jobProgress", {
          state: jobState(job.state),
          done: p.files_done,
          total: p.files_total,
          chunks: p.chunks_embedded,
        });
      }
      await new Promise((resolve) => setTimeout(resolve, 500));
      let poll;
      try {
        poll = await fetch(`/v1/jobs/${job.job_id}`, { headers: headers() });
      } catch (err) {
        // the server is down or restarting: say so and keep asking (the job's record says
        // afterwards which files were indexed), giving up after about ten minutes
        if (++lost > 300) {
          $("upload-status").textContent = `${t("error")}: ${err}`;
          return;
        }
        $("upload-status").textContent = t("connectionLost");
        await new Promise((resolve) => setTimeout(resolve, 1500));
        continue;
      }
      lost = 0;
      if (!poll.ok) {
        $("upload-status").textContent = await errorMessage(poll);
        return;
      }
      job = await poll.json();
    }
    $("upload-status").textContent = t("uploadDone", { state: jobState(job.state) });
    const list = $("upload-files-status");
    list.replaceChildren();
    for (const f of job.files) {
      const item = document.createElement("li");
      item.className = f.status;
      item.textContent = f.status === "indexed"
        ? `${f.name}: ${t("indexed")}`
        : f.status === "not_indexed"
          ? `${f.name}: ${t("notIndexed")}`
          : `${f.name}: ${t("failed")} (${f.code}) ${f.reason}`;
      list.append(item);
    }
    await loadCollections();
    $("collection").value = collection;
  } catch (err) {
    $("upload-status").textContent = `${t("error")}: ${err}`;
  } finally {
    $("upload").disabled = false;
  }
}

// ------------------------------------------------------------------ start
document.addEventListener("DOMContentLoaded", () => {
  translatePage();
  $("api-key").value = apiKey();
  $("key-form").addEventListener("submit", (event) => {
    event.preventDefault();
    sessionStorage.setItem(KEY_STORAGE, $("api-key").value.trim());
    loadCollections();
  });
  $("ask-form").addEventListener("submit", ask);
  $("upload-form").addEventListener("submit", upload);
  $("collection").addEventListener("change", clearAnswer);
  loadCollections();
});
