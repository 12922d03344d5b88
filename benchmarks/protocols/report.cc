#include "benchmarks/protocols/report.h"

#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <fstream>
#include <iostream>
#include <sstream>

#include "benchmarks/net/child_process.h"

namespace lmdx::bench {
namespace {

const RunResult* Find(const std::vector<RunResult>& runs, const std::string& sample,
                      const std::string& protocol, int nodes) {
  for (const RunResult& run : runs) {
    if (run.sample == sample && run.protocol == protocol && run.nodes == nodes && run.ok) {
      return &run;
    }
  }
  return nullptr;
}

// The case's run whether it succeeded or not (a table names the failure); nullptr: not run.
const RunResult* Attempt(const std::vector<RunResult>& runs, const std::string& sample,
                         const std::string& protocol, int nodes) {
  const RunResult* found = nullptr;
  for (const RunResult& run : runs) {
    if (run.sample == sample && run.protocol == protocol && run.nodes == nodes) found = &run;
  }
  return found;
}

std::string Fixed(double value, int decimals) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

// Rows with a time and nothing else: OpenMPI's own traffic is not counted, and the plain threads
// send nothing.
bool TimeOnly(const std::string& variant) { return variant == kMpi || variant == kThreads; }

// The same protocol's time on 1 node over this run's: how much the nodes bought.
std::string SpeedUp(const std::vector<RunResult>& runs, const RunResult& run) {
  const RunResult* one = Find(runs, run.sample, run.protocol, 1);
  if (one == nullptr || run.seconds <= 0) return "";
  return Fixed(one->seconds / run.seconds, 2);
}

// This run's time over the plain-threads version's with as many threads as this run has nodes:
// what running the kernel across nodes cost against the same kernel over private memory.
std::string OverThreads(const std::vector<RunResult>& runs, const RunResult& run) {
  const RunResult* threads = Find(runs, run.sample, kThreads, run.nodes);
  if (threads == nullptr || threads->seconds <= 0) return "";
  return Fixed(run.seconds / threads->seconds, 2);
}

// The rows of a sample: the protocols asked for, then its message, MPI and threads versions if
// they ran (the time-only ones last, which the charts rely on).
std::vector<std::string> Variants(const ReportSetup& setup, const std::vector<RunResult>& runs,
                                  const std::string& sample) {
  std::vector<std::string> variants = setup.protocols;
  for (const char* baseline : {kMessages, kMpi, kThreads}) {
    for (const RunResult& run : runs) {
      if (run.sample == sample && run.protocol == baseline) {
        variants.push_back(baseline);
        break;
      }
    }
  }
  return variants;
}

// This run's bytes over the message version's on as many nodes: what sharing memory cost in
// traffic against writing the messages by hand.
std::string BytesOverMessages(const std::vector<RunResult>& runs, const RunResult& run) {
  if (TimeOnly(run.protocol) || run.protocol == kMessages) return "";
  const RunResult* messages = Find(runs, run.sample, kMessages, run.nodes);
  if (messages == nullptr || messages->bytes <= 0) return "";
  return Fixed(run.bytes / messages->bytes, 2);
}

std::string Today() {
  std::time_t now = std::time(nullptr);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M", std::localtime(&now));
  return text;
}

// One record of results.json; `key` names what ran ("sample" or "pattern").
void WriteJsonRecord(std::ofstream& out, const char* key, const RunResult& r) {
  out << "    {\"" << key << "\": \"" << r.sample << "\", \"protocol\": \"" << r.protocol
      << "\", \"nodes\": " << r.nodes << ", \"ok\": " << (r.ok ? "true" : "false");
  if (r.ok) {
    out << ", \"seconds\": " << Fixed(r.seconds, 4)
        << ", \"read_faults\": " << Fixed(r.read_faults, 0)
        << ", \"write_faults\": " << Fixed(r.write_faults, 0)
        << ", \"pages_fetched\": " << Fixed(r.pages_fetched, 0)
        << ", \"diffs_made\": " << Fixed(r.diffs_made, 0)
        << ", \"diff_bytes\": " << Fixed(r.diff_bytes, 0)
        << ", \"messages\": " << Fixed(r.messages, 0) << ", \"bytes\": " << Fixed(r.bytes, 0);
  } else {
    std::string failure;
    for (char c : r.failure) failure += (c == '"' || c == '\\') ? '\'' : c;
    out << ", \"failure\": \"" << failure << "\"";
  }
  out << "}";
}

// The samples' runs under "runs", as before the patterns; the patterns' under "patterns".
void WriteJson(const std::string& path, const ReportSetup& setup,
               const std::vector<RunResult>& runs, const std::vector<RunResult>& pattern_runs) {
  std::ofstream out(path);
  out << "{\n  \"date\": \"" << Today() << "\",\n  \"cores\": " << ::sysconf(_SC_NPROCESSORS_ONLN)
      << ",\n  \"sizes\": \"" << (setup.quick ? "quick" : "default") << "\",\n  \"runs\": [\n";
  for (std::size_t i = 0; i < runs.size(); ++i) {
    WriteJsonRecord(out, "sample", runs[i]);
    out << (i + 1 < runs.size() ? "," : "") << "\n";
  }
  out << "  ],\n  \"patterns\": [\n";
  for (std::size_t i = 0; i < pattern_runs.size(); ++i) {
    WriteJsonRecord(out, "pattern", pattern_runs[i]);
    out << (i + 1 < pattern_runs.size() ? "," : "") << "\n";
  }
  out << "  ]\n}\n";
}

// The column `kind` says which table a row belongs to (`sample` holds the pattern's name in a
// pattern's row); columns added later come after it, so that the ones before stay where they were.
void WriteCsv(const std::string& path, const std::vector<RunResult>& runs,
              const std::vector<RunResult>& pattern_runs) {
  std::ofstream out(path);
  out << "sample,protocol,nodes,ok,seconds,speedup_vs_1_node,read_faults,write_faults,"
         "pages_fetched,diffs_made,diff_bytes,messages,bytes,bytes_over_messages,kind,"
         "time_over_threads\n";
  for (const auto* list : {&runs, &pattern_runs}) {
    const char* kind = list == &runs ? "sample" : "pattern";
    for (const RunResult& r : *list) {
      out << r.sample << ',' << r.protocol << ',' << r.nodes << ',' << (r.ok ? 1 : 0) << ','
          << Fixed(r.seconds, 4) << ',' << SpeedUp(*list, r) << ',' << Fixed(r.read_faults, 0)
          << ',' << Fixed(r.write_faults, 0) << ',' << Fixed(r.pages_fetched, 0) << ','
          << Fixed(r.diffs_made, 0) << ',' << Fixed(r.diff_bytes, 0) << ',' << Fixed(r.messages, 0)
          << ',' << Fixed(r.bytes, 0) << ',' << BytesOverMessages(*list, r) << ',' << kind << ','
          << OverThreads(*list, r) << '\n';
    }
  }
}

std::string MarkdownTable(const ReportSetup& setup, const std::vector<RunResult>& runs) {
  std::ostringstream md;
  for (const std::string& sample : setup.samples) {
    md << "\n### " << sample << "\n\n"
       << "| protocol | nodes | time (s) | vs 1 node | vs threads | faults (read + write) | "
          "pages fetched | diffs | messages | MB moved | bytes / message version's |\n"
       << "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n";
    for (const std::string& protocol : Variants(setup, runs, sample)) {
      for (int nodes : setup.nodes) {
        md << "| " << protocol << " | " << nodes << " | ";
        const RunResult* r = Attempt(runs, sample, protocol, nodes);
        if (r == nullptr || !r->ok) {
          md << "failed: " << (r ? r->failure : "not run") << " | | | | | | | | |\n";
          continue;
        }
        md << Fixed(r->seconds, 3) << " | " << SpeedUp(runs, *r) << " | " << OverThreads(runs, *r)
           << " | ";
        if (TimeOnly(r->protocol)) {
          md << "| | | | | |\n";
          continue;
        }
        md << Fixed(r->read_faults + r->write_faults, 0) << " | " << Fixed(r->pages_fetched, 0)
           << " | " << Fixed(r->diffs_made, 0) << " | " << Fixed(r->messages, 0) << " | "
           << Fixed(r->bytes / 1e6, 2) << " | " << BytesOverMessages(runs, *r) << " |\n";
      }
    }
  }
  return md.str();
}

// A table per pattern: a row per protocol and node count, with the time over the fastest
// protocol's on as many nodes, which says at a glance which protocol the pattern suits.
std::string PatternTables(const ReportSetup& setup, const std::vector<RunResult>& runs) {
  std::ostringstream md;
  for (const std::string& pattern : setup.patterns) {
    md << "\n### " << pattern << "\n\n"
       << "| protocol | nodes | time (ms) | vs fastest | read faults | write faults | messages | "
          "KB sent |\n"
       << "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n";
    for (const std::string& protocol : setup.protocols) {
      for (int nodes : setup.pattern_nodes) {
        md << "| " << protocol << " | " << nodes << " | ";
        const RunResult* r = Attempt(runs, pattern, protocol, nodes);
        if (r == nullptr || !r->ok) {
          md << "failed: " << (r ? r->failure : "not run") << " | | | | | |\n";
          continue;
        }
        double fastest = r->seconds;
        for (const std::string& other : setup.protocols) {
          const RunResult* o = Find(runs, pattern, other, nodes);
          if (o != nullptr && o->seconds < fastest) fastest = o->seconds;
        }
        md << Fixed(1e3 * r->seconds, 1) << " | "
           << (fastest > 0 ? Fixed(r->seconds / fastest, 2) : "") << " | "
           << Fixed(r->read_faults, 0) << " | " << Fixed(r->write_faults, 0) << " | "
           << Fixed(r->messages, 0) << " | " << Fixed(r->bytes / 1e3, 0) << " |\n";
      }
    }
  }
  return md.str();
}

}  // namespace

std::string WriteReport(const std::string& dir, const ReportSetup& setup,
                        const std::vector<RunResult>& runs,
                        const std::vector<RunResult>& pattern_runs) {
  WriteJson(dir + "/results.json", setup, runs, pattern_runs);
  WriteCsv(dir + "/results.csv", runs, pattern_runs);
  std::string tables;
  if (!setup.samples.empty()) tables += "\n## Samples\n" + MarkdownTable(setup, runs);
  if (!setup.patterns.empty()) {
    tables +=
        "\n## Sharing patterns\n\n"
        "benchmarks/protocols/patterns.cc, one pattern per run; time is the pattern's own (rank "
        "0, from the barrier after its set-up to its last barrier), vs fastest is that time over "
        "the fastest protocol's on as many nodes.\n" +
        PatternTables(setup, pattern_runs);
  }
  std::ofstream md(dir + "/results.md");
  md << "# Protocol report (" << Today() << ", " << ::sysconf(_SC_NPROCESSORS_ONLN) << " cores, "
     << (setup.quick ? "quick" : "default") << " sizes)\n\n"
     << "Time is each program's own figure for its parallel part; vs threads is that time over "
        "the plain-threads version's with as many threads as nodes; faults, fetches, diffs, "
        "messages and bytes are sums over the nodes of the protocol statistics.\n"
     << tables;
  return tables;
}

std::vector<std::string> DrawCharts(const std::string& dir, const ReportSetup& setup,
                                    const std::vector<RunResult>& runs) {
  std::string gnuplot = find_on_path("gnuplot");
  if (gnuplot.empty()) {
    std::cerr << "lmdx bench protocols: no gnuplot on PATH, so no charts (./lmdx setup installs "
                 "it)\n";
    return {};
  }
  struct Metric {
    const char* title;
    double (*value)(const RunResult&);
  };
  const Metric metrics[] = {
      {"time (s)", [](const RunResult& r) { return r.seconds; }},
      {"page faults", [](const RunResult& r) { return r.read_faults + r.write_faults; }},
      {"messages sent", [](const RunResult& r) { return r.messages; }},
      {"MB moved", [](const RunResult& r) { return r.bytes / 1e6; }},
  };
  std::vector<std::string> drawn;
  for (const std::string& sample : setup.samples) {
    // One data block per metric: a row per node count, a column per protocol.
    const std::vector<std::string> variants = Variants(setup, runs, sample);
    std::string data_file = dir + "/" + sample + ".dat";
    std::ofstream data(data_file);
    for (std::size_t m = 0; m < std::size(metrics); ++m) {
      const Metric& metric = metrics[m];
      data << "nodes";
      // The message version's series is named apart from the panel of messages sent.
      for (const std::string& p : variants) data << ' ' << (p == kMessages ? "message-passing" : p);
      data << '\n';
      for (int nodes : setup.nodes) {
        data << nodes;
        for (const std::string& p : variants) {
          const RunResult* r = Find(runs, sample, p, nodes);
          bool counted = r != nullptr && (m == 0 || !TimeOnly(r->protocol));
          data << ' ' << (counted ? std::to_string(metric.value(*r)) : "NaN");
        }
        data << '\n';
      }
      data << "\n\n";
    }
    data.close();
    std::string png = dir + "/" + sample + ".png";
    std::string script_file = dir + "/" + sample + ".gp";
    std::ofstream script(script_file);
    script << "set terminal pngcairo size 1200,800 noenhanced\nset output '" << png << "'\n"
           << "set multiplot layout 2,2 title '" << sample << ": each protocol by node count"
           << (setup.quick ? " (quick sizes: figures meaningless)" : "") << "'\n"
           << "set style data histograms\nset style histogram clustered gap 1\n"
           << "set style fill solid 0.8 border -1\nset key top left\nset yrange [0:*]\n"
           << "set xlabel 'nodes'\n";
    for (std::size_t m = 0; m < std::size(metrics); ++m) {
      // MPI's and the threads' columns (always the last) have a time and nothing else: gnuplot
      // refuses a column with no point at all.
      std::size_t columns = variants.size();
      while (m > 0 && columns > 0 && TimeOnly(variants[columns - 1])) --columns;
      script << "set title '" << metrics[m].title << "'\nplot for [c=2:" << columns + 1 << "] '"
             << data_file << "' index " << m << " using c:xtic(1) title columnheader\n";
    }
    script << "unset multiplot\n";
    script.close();
    ChildOutcome outcome = run_child({gnuplot, script_file}, {}, [](const std::string&) {});
    if (outcome.ok()) {
      drawn.push_back(png);
    } else {
      std::cerr << "lmdx bench protocols: gnuplot " << describe(outcome) << " drawing " << png
                << '\n';
    }
  }
  return drawn;
}

}  // namespace lmdx::bench
