package classify

import "github.com/pagewatch/pagewatch/domain/hit"

// aiClient is an entry of the AI table: a substring of the user agent,
// compared without case, and the class it makes.
type aiClient struct {
	token string
	class hit.Class
}

// aiTable tells AI clients apart, which the crawler list does not: it
// has GPTBot and ChatGPT-User alike as crawlers, though ChatGPT-User is
// a person reading a page through an assistant. It is checked before the
// list, so its entries win over the list's.
//
// An agent fetches one page because a person asked for it, at that
// moment; its operator documents it as user-triggered, and it generally
// ignores robots.txt for that reason. A crawler gathers pages by itself,
// for training or for the index an AI product answers from. Where an
// operator runs both, each has its own token, documented as such.
//
// Tokens only for robots.txt (Google-Extended, Applebot-Extended,
// Webzio-Extended) are not here: they send no request; the pages are
// fetched by Googlebot, Applebot and omgili.
func aiTable() []aiClient {
	return []aiClient{
		// Agents: a person's request, fetched now.
		{"ChatGPT-User", hit.ClassAIAgent},    // OpenAI: actions a user starts in ChatGPT and custom GPTs
		{"Claude-User", hit.ClassAIAgent},     // Anthropic: pages a user asks Claude about
		{"Perplexity-User", hit.ClassAIAgent}, // Perplexity: pages fetched to answer a user's question
		{"MistralAI-User", hit.ClassAIAgent},  // Mistral: Le Chat fetching for a user
		{"DuckAssistBot", hit.ClassAIAgent},   // DuckDuckGo: fetched live for a DuckAssist answer
		// Google's user-triggered fetchers for Gemini features.
		{"Google-NotebookLM", hit.ClassAIAgent},
		{"Google-GeminiNotebook", hit.ClassAIAgent},
		{"Gemini-Deep-Research", hit.ClassAIAgent},
		// Meta: links a person shares with Meta AI; its crawler is meta-externalagent.
		{"meta-externalfetcher", hit.ClassAIAgent},

		// Crawlers: training sets and AI indexes.
		{"GPTBot", hit.ClassAICrawler},           // OpenAI: training
		{"OAI-SearchBot", hit.ClassAICrawler},    // OpenAI: ChatGPT search's index
		{"ClaudeBot", hit.ClassAICrawler},        // Anthropic: training
		{"Claude-SearchBot", hit.ClassAICrawler}, // Anthropic: Claude's search index
		{"anthropic-ai", hit.ClassAICrawler},     // Anthropic's older token
		{"Claude-Web", hit.ClassAICrawler},       // Anthropic's older token
		{"PerplexityBot", hit.ClassAICrawler},    // Perplexity's index
		{"CCBot", hit.ClassAICrawler},            // Common Crawl: the corpus most models train on
		{"Bytespider", hit.ClassAICrawler},       // ByteDance: training (Doubao)
		{"meta-externalagent", hit.ClassAICrawler},
		{"FacebookBot", hit.ClassAICrawler},           // Meta: training speech and language models
		{"Google-CloudVertexBot", hit.ClassAICrawler}, // Vertex AI agents' index of a site
		{"cohere-ai", hit.ClassAICrawler},
		{"cohere-training-data-crawler", hit.ClassAICrawler},
		{"Amazonbot", hit.ClassAICrawler},    // Amazon: Alexa's answers, and "may be used to train" its models
		{"Diffbot", hit.ClassAICrawler},      // a knowledge graph sold for AI
		{"omgili", hit.ClassAICrawler},       // Webz.io: data sold for training
		{"YouBot", hit.ClassAICrawler},       // You.com's AI search index
		{"ImagesiftBot", hit.ClassAICrawler}, // images for AI (Hive)
		{"AI2Bot", hit.ClassAICrawler},       // Allen Institute: training (Dolma); also matches Ai2Bot-Dolma
		{"Timpibot", hit.ClassAICrawler},     // an index sold for training
		{"PanguBot", hit.ClassAICrawler},     // Huawei: training PanGu
	}
}
