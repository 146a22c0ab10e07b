#include "tita-training-file.h"

#include "tita-units.h"

#include <charconv>
#include <fstream>
#include <map>

namespace ns3
{

namespace
{

// Bounds that turn a wrong number into a message rather than a huge allocation
// or an overflow: far above any model AICB describes.
constexpr uint64_t kMaxLayers = 10'000'000;
constexpr uint64_t kMaxGpus = 1'000'000;
constexpr uint64_t kMaxComputeNs = 3'600'000'000'000; // an hour per phase
constexpr uint64_t kMaxCommBytes = 1ULL << 44;        // 16 TiB

struct TypeName
{
    const char* name;
    TitaTrainingCollective type;
};

constexpr TypeName kTypes[] = {{"ALLREDUCE", TitaTrainingCollective::kAllReduce},
                               {"ALLGATHER", TitaTrainingCollective::kAllGather},
                               {"REDUCESCATTER", TitaTrainingCollective::kReduceScatter},
                               {"ALLTOALL", TitaTrainingCollective::kAllToAll}};

// "ALLGATHER_DP_EP" -> type and group; `weightGradient` picks the group of a
// bare name (DP for the weight gradient, TP otherwise). False with the reason.
bool
ParseComm(const std::string& word, bool weightGradient, TitaTrainingComm* c, std::string* why)
{
    if (word == "NONE")
    {
        *c = TitaTrainingComm{};
        return true;
    }
    for (const TypeName& t : kTypes)
    {
        const std::string base = t.name;
        if (word.compare(0, base.size(), base) != 0)
        {
            continue;
        }
        const std::string suffix = word.substr(base.size());
        c->type = t.type;
        if (suffix.empty())
        {
            c->group = weightGradient ? TitaTrainingGroup::kDp : TitaTrainingGroup::kTp;
        }
        else if (suffix == "_EP")
        {
            c->group = TitaTrainingGroup::kEp;
        }
        else if (suffix == "_DP_EP")
        {
            c->group = TitaTrainingGroup::kDpEp;
        }
        else
        {
            break;
        }
        return true;
    }
    *why = "collective '" + word +
           "' is not NONE or ALLREDUCE, ALLGATHER, REDUCESCATTER, ALLTOALL with no suffix, _EP or _DP_EP";
    return false;
}

bool
ParseUint(const std::string& text, uint64_t max, uint64_t* v)
{
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *v);
    return !text.empty() && ec == std::errc() && end == text.data() + text.size() && *v <= max;
}

// The header line (its words in w): the parallelism, then "key: value" pairs.
bool
ReadHeader(TitaLineReader& lines, const std::vector<std::string>& w, TitaTrainingFile* out, std::string* err)
{
    TitaTrainingFile& f = *out;
    f.policy = w[0];
    if (f.policy != "HYBRID_TRANSFORMER" && f.policy != "HYBRID_TRANSFORMER_FWD_IN_BCKWD")
    {
        return lines.Fail(err,
                          "parallelism '" + f.policy +
                              "' is not HYBRID_TRANSFORMER or HYBRID_TRANSFORMER_FWD_IN_BCKWD (the ones tita-sim runs)");
    }
    // "key: value" pairs (pp_comm also without the colon); checkpoints and
    // checkpoint_initiates are a count and that many layer numbers.
    std::map<std::string, uint64_t> kv;
    for (std::size_t i = 1; i < w.size(); i += 2)
    {
        std::string key = w[i];
        if (!key.empty() && key.back() == ':')
        {
            key.pop_back();
        }
        static const char* const kKeys[] = {"model_parallel_NPU_group", "ep", "pp", "vpp", "ga", "all_gpus",
                                            "checkpoints", "checkpoint_initiates", "pp_comm"};
        bool known = false;
        for (const char* k : kKeys)
        {
            known |= key == k;
        }
        if (!known)
        {
            return lines.Fail(err, "unknown header key '" + w[i] + "'");
        }
        uint64_t v = 0;
        if (i + 1 >= w.size() || !ParseUint(w[i + 1], kMaxCommBytes, &v))
        {
            return lines.Fail(err, "header key '" + w[i] + "' wants a whole number after it");
        }
        if (kv.count(key))
        {
            return lines.Fail(err, "header key '" + key + "' given twice");
        }
        kv[key] = v;
        if (key == "checkpoints" || key == "checkpoint_initiates")
        {
            // The layer numbers; recomputation is not modelled (doc/training.md).
            if (i + 1 + v >= w.size())
            {
                return lines.Fail(err, "'" + key + "' lists fewer layers than its count");
            }
            i += v;
        }
    }
    for (const char* k : {"model_parallel_NPU_group", "all_gpus"})
    {
        if (!kv.count(k))
        {
            return lines.Fail(err, std::string("header lacks '") + k + ":'");
        }
    }
    auto get = [&kv](const char* k, uint64_t def) { return kv.count(k) ? kv[k] : def; };
    const uint64_t tp = get("model_parallel_NPU_group", 1);
    const uint64_t ep = get("ep", 1);
    const uint64_t pp = get("pp", 1);
    const uint64_t vpp = get("vpp", 1);
    const uint64_t ga = get("ga", 1);
    const uint64_t all = get("all_gpus", 0);
    f.ppCommBytes = get("pp_comm", 0);
    for (uint64_t v : {tp, ep, pp, vpp, ga, all})
    {
        if (v == 0 || v > kMaxGpus)
        {
            return lines.Fail(err, "model_parallel_NPU_group, ep, pp, vpp, ga and all_gpus must be 1 to 1000000");
        }
    }
    if (all % (tp * pp) != 0)
    {
        return lines.Fail(err,
                          "all_gpus " + std::to_string(all) + " is not a multiple of model_parallel_NPU_group x pp = " +
                              std::to_string(tp * pp));
    }
    if ((all / (tp * pp)) % ep != 0)
    {
        return lines.Fail(err,
                          "ep " + std::to_string(ep) + " does not divide the data-parallel size " +
                              std::to_string(all / (tp * pp)));
    }
    if (pp > 1 && f.ppCommBytes == 0)
    {
        return lines.Fail(err, "pp " + std::to_string(pp) + " needs pp_comm (bytes between stages) above 0");
    }
    f.tp = static_cast<uint32_t>(tp);
    f.ep = static_cast<uint32_t>(ep);
    f.pp = static_cast<uint32_t>(pp);
    f.vpp = static_cast<uint32_t>(vpp);
    f.ga = static_cast<uint32_t>(ga);
    f.allGpus = static_cast<uint32_t>(all);
    return true;
}

// One layer line (its words in w) into l.
bool
ReadLayer(TitaLineReader& lines, const std::vector<std::string>& w, TitaTrainingLayer* out, std::string* err)
{
    TitaTrainingLayer& l = *out;
    std::string why;
    if (w.size() != 12)
    {
        return lines.Fail(err,
                          "expected 12 fields (name, -1, fwd_ns, type, bytes, ig_ns, type, bytes, wg_ns, type, "
                          "bytes, update_ns), found " +
                              std::to_string(w.size()));
    }
    l.name = w[0];
    int64_t dep = 0;
    const auto [end, ec] = std::from_chars(w[1].data(), w[1].data() + w[1].size(), dep);
    if (ec != std::errc() || end != w[1].data() + w[1].size())
    {
        return lines.Fail(err, "field 2 '" + w[1] + "' is not a whole number (the dependency, -1)");
    }
    struct Phase
    {
        std::size_t at;
        uint64_t* computeNs;
        TitaTrainingComm* comm;
        bool wg;
        const char* name;
    };
    const Phase phases[] = {{2, &l.fwdComputeNs, &l.fwd, false, "forward"},
                            {5, &l.igComputeNs, &l.ig, false, "input-gradient"},
                            {8, &l.wgComputeNs, &l.wg, true, "weight-gradient"}};
    for (const Phase& p : phases)
    {
        if (!ParseUint(w[p.at], kMaxComputeNs, p.computeNs))
        {
            return lines.Fail(err,
                              std::string(p.name) + " compute time '" + w[p.at] +
                                  "' is not a whole number of nanoseconds up to an hour");
        }
        if (!ParseComm(w[p.at + 1], p.wg, p.comm, &why))
        {
            return lines.Fail(err, std::string(p.name) + " " + why);
        }
        uint64_t bytes = 0;
        if (!ParseUint(w[p.at + 2], kMaxCommBytes, &bytes))
        {
            return lines.Fail(err,
                              std::string(p.name) + " size '" + w[p.at + 2] +
                                  "' is not a whole number of bytes up to 16 TiB");
        }
        if (p.comm->type != TitaTrainingCollective::kNone)
        {
            p.comm->bytes = bytes; // NONE's size means nothing (AICB writes one)
        }
    }
    if (!ParseUint(w[11], kMaxComputeNs, &l.updateNs))
    {
        return lines.Fail(err, "update time '" + w[11] + "' is not a whole number of nanoseconds up to an hour");
    }
    return true;
}

} // namespace

const char*
TitaTrainingGroupName(TitaTrainingGroup g)
{
    switch (g)
    {
    case TitaTrainingGroup::kTp:
        return "tp";
    case TitaTrainingGroup::kDp:
        return "dp";
    case TitaTrainingGroup::kEp:
        return "ep";
    case TitaTrainingGroup::kDpEp:
        return "dp_ep";
    case TitaTrainingGroup::kPp:
        return "pp";
    case TitaTrainingGroup::kNone:
        break;
    }
    return "none";
}

const char*
TitaTrainingCollectiveName(TitaTrainingCollective c)
{
    switch (c)
    {
    case TitaTrainingCollective::kAllReduce:
        return "allreduce";
    case TitaTrainingCollective::kAllGather:
        return "allgather";
    case TitaTrainingCollective::kReduceScatter:
        return "reducescatter";
    case TitaTrainingCollective::kAllToAll:
        return "alltoall";
    case TitaTrainingCollective::kSendRecv:
        return "sendrecv";
    case TitaTrainingCollective::kNone:
        break;
    }
    return "none";
}

bool
TitaLoadPlacement(const std::string& path, uint32_t ranks, std::vector<TitaRankPlace>* out, std::string* err)
{
    std::ifstream in(path);
    if (!in)
    {
        *err = path + ": cannot open";
        return false;
    }
    TitaLineReader lines(in, path);
    std::vector<TitaRankPlace> place(ranks);
    std::map<std::pair<uint64_t, uint64_t>, uint64_t> taken; // (server, gpu) -> rank
    std::vector<std::string> w;
    while (lines.Next(&w))
    {
        uint64_t rank = 0;
        uint64_t server = 0;
        uint64_t gpu = 0;
        if (w.size() != 3)
        {
            return lines.Fail(err, "expected 3 fields (RANK SERVER GPU), found " + std::to_string(w.size()));
        }
        if (!ParseUint(w[0], UINT32_MAX, &rank) || !ParseUint(w[1], UINT32_MAX, &server) ||
            !ParseUint(w[2], UINT32_MAX, &gpu))
        {
            return lines.Fail(err, "RANK, SERVER and GPU must be whole numbers");
        }
        if (rank >= ranks)
        {
            return lines.Fail(err,
                              "rank " + std::to_string(rank) + ": the workload has ranks 0-" +
                                  std::to_string(ranks - 1));
        }
        if (place[rank].line != 0)
        {
            return lines.Fail(err,
                              "rank " + std::to_string(rank) + " again (first on line " +
                                  std::to_string(place[rank].line) + ")");
        }
        const auto [it, fresh] = taken.emplace(std::make_pair(server, gpu), rank);
        if (!fresh)
        {
            return lines.Fail(err,
                              "server " + std::to_string(server) + " GPU " + std::to_string(gpu) +
                                  " already holds rank " + std::to_string(it->second));
        }
        place[rank] = {static_cast<uint32_t>(server), static_cast<uint32_t>(gpu), lines.Number()};
    }
    for (uint32_t r = 0; r < ranks; ++r)
    {
        if (place[r].line == 0)
        {
            *err = path + ": rank " + std::to_string(r) + " has no line (every rank 0-" + std::to_string(ranks - 1) +
                   " needs one)";
            return false;
        }
    }
    *out = std::move(place);
    return true;
}

bool
TitaTrainingFile::Load(const std::string& path, std::string* err)
{
    std::ifstream in(path);
    if (!in)
    {
        *err = path + ": cannot open";
        return false;
    }
    return Read(in, path, err);
}

bool
TitaTrainingFile::Read(std::istream& in, const std::string& name, std::string* err)
{
    TitaTrainingFile f;
    TitaLineReader lines(in, name);
    std::vector<std::string> w;
    if (!lines.Next(&w))
    {
        return lines.Fail(err, "empty file, expected the header line");
    }
    if (!ReadHeader(lines, w, &f, err))
    {
        return false;
    }

    uint64_t count = 0;
    if (!lines.Next(&w))
    {
        return lines.Fail(err, "expected the number of layer lines");
    }
    if (w.size() != 1 || !ParseUint(w[0], kMaxLayers, &count) || count == 0)
    {
        return lines.Fail(err, "expected the number of layer lines (1 to 10000000) alone on the line");
    }
    const uint64_t countLine = lines.Number();
    f.layers.reserve(count);
    while (lines.Next(&w))
    {
        if (f.layers.size() == count)
        {
            return lines.Fail(err, "more layer lines than the " + std::to_string(count) + " announced");
        }
        TitaTrainingLayer l;
        if (!ReadLayer(lines, w, &l, err))
        {
            return false;
        }
        l.line = static_cast<uint32_t>(lines.Number());
        f.layers.push_back(std::move(l));
    }
    if (f.layers.size() != count)
    {
        // Named at the line that announced them.
        *err = name + ":" + std::to_string(countLine) + ": " + std::to_string(count) + " layer lines announced, " +
               std::to_string(f.layers.size()) + " found";
        return false;
    }
    *this = std::move(f);
    return true;
}

} // namespace ns3
