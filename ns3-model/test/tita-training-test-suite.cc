// TestSuite "tita-training": SimAI/AICB workload files (tita-training-file.h)
// and training iterations through tita-sim's scenario (tita-training.h,
// doc/training.md): the bytes every GPU receives, the iteration time against
// its analytical bound, overlap, and malformed files.
#include "tita-scenario.h"
#include "tita-spec.h"
#include "tita-training-file.h"
#include "tita-training.h"

#include "ns3/simulator.h"
#include "ns3/test.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

using namespace ns3;

namespace
{

std::string
ReadAll(const std::string& path)
{
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

std::vector<std::vector<std::string>>
Rows(const std::string& path)
{
    std::vector<std::vector<std::string>> rows;
    std::istringstream in(ReadAll(path));
    std::string line;
    std::getline(in, line); // header
    while (std::getline(in, line))
    {
        rows.push_back(TitaSpec::SplitList(line, ',', true));
    }
    return rows;
}

const std::string kData = TITA_DATA_DIR "/training/";
const std::string kTopo = "multirail:blocks=1,servers=2,gpus=8,spines=2,nvlink=1";

// Runs a training spec on 2 servers x 8 GPUs; the output directory.
std::string
RunTraining(const std::string& workload, const std::string& name, std::string* said)
{
    TitaScenarioConfig cfg;
    cfg.topo = kTopo;
    cfg.workload = workload;
    cfg.progress = 0;
    cfg.qlenInterval = "0s";
    cfg.outDir = (std::filesystem::temp_directory_path() / ("tita-training-" + name)).string();
    std::filesystem::remove_all(cfg.outDir);
    std::ostringstream notes;
    TitaNotes n(&notes, "t");
    std::string err;
    {
        TitaScenario sc(cfg, n);
        if (!sc.Build(&err))
        {
            *said = err;
            Simulator::Destroy();
            return "";
        }
        sc.Run();
        sc.Finish();
    }
    Simulator::Destroy();
    *said = notes.str();
    return cfg.outDir;
}

class TitaTrainingFileTestCase : public TestCase
{
  public:
    TitaTrainingFileTestCase()
        : TestCase("TitaTrainingFile: SimAI's layout, groups and units; each malformed file rejected at its line")
    {
    }

  private:
    void DoRun() override
    {
        std::string err;
        TitaTrainingFile f;
        NS_TEST_ASSERT_MSG_EQ(f.Load(kData + "all-types.txt", &err), true, err);
        NS_TEST_EXPECT_MSG_EQ(f.tp, 4, "model_parallel_NPU_group");
        NS_TEST_EXPECT_MSG_EQ(f.ep, 2, "ep");
        NS_TEST_EXPECT_MSG_EQ(f.pp, 2, "pp");
        NS_TEST_EXPECT_MSG_EQ(f.Dp(), 2, "dp = all_gpus / (tp x pp)");
        NS_TEST_EXPECT_MSG_EQ(f.ppCommBytes, 1048576, "pp_comm");
        NS_TEST_ASSERT_MSG_EQ(f.layers.size(), 2, "layers");
        NS_TEST_EXPECT_MSG_EQ(f.layers[0].fwdComputeNs, 20000, "ns");
        NS_TEST_EXPECT_MSG_EQ((f.layers[0].fwd.group == TitaTrainingGroup::kTp), true, "bare fwd: TP");
        NS_TEST_EXPECT_MSG_EQ((f.layers[0].wg.group == TitaTrainingGroup::kDp), true, "bare wg: DP");
        NS_TEST_EXPECT_MSG_EQ((f.layers[1].fwd.group == TitaTrainingGroup::kEp), true, "_EP");
        NS_TEST_EXPECT_MSG_EQ((f.layers[1].fwd.type == TitaTrainingCollective::kAllToAll), true, "ALLTOALL_EP");
        NS_TEST_EXPECT_MSG_EQ(f.layers[1].wg.bytes, 0, "NONE");
        NS_TEST_EXPECT_MSG_EQ(f.layers[1].line, 4, "its line");

        const std::string head = "HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 8 ep: 1 pp: 1 vpp: 1 "
                                 "ga: 1 all_gpus: 16 checkpoints: 0 checkpoint_initiates: 0 pp_comm: 0\n";
        const std::string good = "l -1 1 ALLGATHER 100 1 NONE 0 1 REDUCESCATTER_DP_EP 8 100\n";
        struct Bad
        {
            std::string text;
            std::string message;
        };
        const Bad bad[] = {
            {"", "f: at the end: empty file, expected the header line"},
            {"DLRM x: 1\n1\n" + good, "f:1: parallelism 'DLRM' is not HYBRID_TRANSFORMER"},
            {"HYBRID_TRANSFORMER all_gpus: 16\n1\n" + good, "f:1: header lacks 'model_parallel_NPU_group:'"},
            {"HYBRID_TRANSFORMER model_parallel_NPU_group: 3 all_gpus: 16\n1\n" + good,
             "f:1: all_gpus 16 is not a multiple of model_parallel_NPU_group x pp = 3"},
            {"HYBRID_TRANSFORMER model_parallel_NPU_group: 8 pp: 2 all_gpus: 16\n1\n" + good,
             "f:1: pp 2 needs pp_comm"},
            {"HYBRID_TRANSFORMER model_parallel_NPU_group: 8 all_gpus: 16 bogus: 1\n1\n" + good,
             "f:1: unknown header key 'bogus:'"},
            {head + "two\n" + good, "f:2: expected the number of layer lines"},
            {head + "\n2\n" + good, "f:3: 2 layer lines announced, 1 found"},
            {head + "1\n" + good + good, "f:4: more layer lines than the 1 announced"},
            {head + "1\nl -1 1 ALLGATHER 100 1 NONE 0 1 NONE 0\n", "f:3: expected 12 fields"},
            {head + "1\nl -1 1.5 ALLGATHER 100 1 NONE 0 1 NONE 0 1\n", "f:3: forward compute time '1.5'"},
            {head + "1\nl -1 1 BROADCAST 100 1 NONE 0 1 NONE 0 1\n", "f:3: forward collective 'BROADCAST'"},
            {head + "1\nl -1 1 ALLGATHER_TP 100 1 NONE 0 1 NONE 0 1\n", "f:3: forward collective 'ALLGATHER_TP'"},
            {head + "1\nl -1 1 ALLGATHER -5 1 NONE 0 1 NONE 0 1\n", "f:3: forward size '-5'"},
            {head + "1\nl x 1 ALLGATHER 5 1 NONE 0 1 NONE 0 1\n", "f:3: field 2 'x'"},
            {head + "1\nl -1 1 ALLGATHER 5 1 NONE 0 1 ALLREDUCE 9 z\n", "f:3: update time 'z'"},
        };
        for (const Bad& b : bad)
        {
            std::istringstream in(b.text);
            TitaTrainingFile g;
            err.clear();
            NS_TEST_EXPECT_MSG_EQ(g.Read(in, "f", &err), false, b.text);
            NS_TEST_EXPECT_MSG_EQ(err.rfind(b.message, 0), 0, "got '" << err << "', want '" << b.message << "'");
            NS_TEST_EXPECT_MSG_EQ(err.find('\n'), std::string::npos, "one line");
        }
    }
};

std::string
Join(const std::vector<uint32_t>& v)
{
    std::string s;
    for (uint32_t x : v)
    {
        s += (s.empty() ? "" : ",") + std::to_string(x);
    }
    return s;
}

class TitaTrainingGroupsTestCase : public TestCase
{
  public:
    TitaTrainingGroupsTestCase()
        : TestCase("TitaTraining groups: TP, DP, EP, DP_EP of a rank in Megatron's order and with DP first")
    {
    }

  private:
    void DoRun() override
    {
        std::string err;
        TitaTrainingFile f;
        NS_TEST_ASSERT_MSG_EQ(f.Load(kData + "all-types.txt", &err), true, err); // tp 4, dp 2, ep 2, pp 2
        const TitaTraining m(Ptr<TitaFlowManager>(), f, TitaTrainingOptions{});
        NS_TEST_EXPECT_MSG_EQ(Join(m.GroupOf(TitaTrainingGroup::kTp, 5)), "4,5,6,7", "TP: 4 consecutive ranks");
        NS_TEST_EXPECT_MSG_EQ(Join(m.GroupOf(TitaTrainingGroup::kDp, 5)), "1,5", "DP: stride tp");
        NS_TEST_EXPECT_MSG_EQ(Join(m.GroupOf(TitaTrainingGroup::kEp, 5)), "1,5", "EP: ep DP ranks");
        NS_TEST_EXPECT_MSG_EQ(Join(m.GroupOf(TitaTrainingGroup::kDpEp, 5)), "5", "DP_EP: dp/ep");
        NS_TEST_EXPECT_MSG_EQ(Join(m.GroupOf(TitaTrainingGroup::kTp, 13)), "12,13,14,15", "TP in stage 1");
        NS_TEST_EXPECT_MSG_EQ(Join(m.GroupOf(TitaTrainingGroup::kDp, 13)), "9,13", "DP in stage 1");
        TitaTrainingOptions o;
        o.dpFirst = true;
        const TitaTraining d(Ptr<TitaFlowManager>(), f, o);
        NS_TEST_EXPECT_MSG_EQ(Join(d.GroupOf(TitaTrainingGroup::kTp, 5)), "1,3,5,7", "TP: stride dp");
        NS_TEST_EXPECT_MSG_EQ(Join(d.GroupOf(TitaTrainingGroup::kDp, 5)), "4,5", "DP: consecutive");

        TitaTrainingFile g;
        NS_TEST_ASSERT_MSG_EQ(g.Load(kData + "tp8-dp2-overlap.txt", &err), true, err);
        const TitaTraining r(Ptr<TitaFlowManager>(), g, TitaTrainingOptions{});
        NS_TEST_EXPECT_MSG_EQ(Join(r.GroupOf(TitaTrainingGroup::kDp, 3)), "3,11", "DP: GPU 3 of both servers");
    }
};

class TitaTrainingRunTestCase : public TestCase
{
  public:
    TitaTrainingRunTestCase()
        : TestCase("training on 2 servers x 8 GPUs: every collective kind, each GPU's bytes, the analytical bound, "
                   "overlap, a bad file before any output")
    {
    }

  private:
    void DoRun() override
    {
        std::string said;
        // all-types.txt: tp 4, dp 2, ep 2, pp 2 on 16 GPUs.
        const std::string dir = RunTraining("training:path=" + kData + "all-types.txt,iterations=2", "all", &said);
        NS_TEST_ASSERT_MSG_NE(dir, "", said);
        // What each GPU receives per iteration (MiB):
        //   fwd AllGather 4 MiB among 4 (TP):   3/4 x 4 = 3
        //   fwd All-to-All 2 MiB among 2 (EP):  1/2 x 2 = 1
        //   ig AllReduce 4 MiB among 4 (TP):  2 x 3/4 x 4 = 6
        //   ig ReduceScatter 4 MiB among 4:     3/4 x 4 = 3
        //   wg AllReduce 8 MiB among 2 (DP):  2 x 1/2 x 8 = 8
        //   pipeline: stage 1 the activations, stage 0 the gradients: 1
        const uint64_t perIteration = (3 + 1 + 6 + 3 + 8 + 1) * uint64_t{1 << 20};
        const auto gpus = Rows(dir + "/training_gpus.csv");
        NS_TEST_ASSERT_MSG_EQ(gpus.size(), 16, "a row per GPU");
        for (std::size_t r = 0; r < gpus.size(); ++r)
        {
            NS_TEST_EXPECT_MSG_EQ(gpus[r][0], std::to_string(r), "rank");
            NS_TEST_EXPECT_MSG_EQ(gpus[r][1] + "," + gpus[r][2],
                                  std::to_string(r / 8) + "," + std::to_string(r % 8),
                                  "rank r on server r/8, GPU r%8");
            NS_TEST_EXPECT_MSG_EQ(gpus[r][4], std::to_string(2 * perIteration), "bytes received by rank " << r);
        }
        const auto its = Rows(dir + "/iterations.csv");
        NS_TEST_ASSERT_MSG_EQ(its.size(), 2, "two iterations");
        for (const auto& it : its)
        {
            const double t = std::stod(it[3]);
            const double bound = std::stod(it[7]);
            NS_TEST_EXPECT_MSG_GT(bound, 0, "a bound");
            NS_TEST_EXPECT_MSG_GT_OR_EQ(t, bound, "never below the analytical bound");
            NS_TEST_EXPECT_MSG_LT_OR_EQ(t, 1.1 * bound, "within 10% of it on an idle non-blocking fabric");
            NS_TEST_EXPECT_MSG_EQ(it[4], "120200", "compute: 2 layers x 3 phases x 20 us and 2 updates of 100 ns");
        }
        std::set<std::string> kinds;
        for (const auto& c : Rows(dir + "/training_collectives.csv"))
        {
            kinds.insert(c[5] + ":" + c[7]);
            NS_TEST_EXPECT_MSG_GT_OR_EQ(std::stod(c[13]), std::stod(c[14]), "collective " << c[0] << " at its bound");
        }
        const std::set<std::string> want{"tp:allgather",
                                         "tp:reducescatter",
                                         "tp:allreduce",
                                         "ep:alltoall",
                                         "dp:allreduce",
                                         "pp:sendrecv"};
        NS_TEST_EXPECT_MSG_EQ((kinds == want), true, "every kind in its group");
        const std::string trace = ReadAll(dir + "/training_trace.json");
        NS_TEST_EXPECT_MSG_EQ(trace.rfind("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[", 0), 0, "trace");
        NS_TEST_EXPECT_MSG_NE(trace.find("\"name\":\"allgather tp fwd attention\""), std::string::npos, "comm span");

        // NVLink as a fluid: the same bytes, still never below the bound.
        const std::string fl = RunTraining("training:path=" + kData + "all-types.txt,nvlink=fluid", "fluid", &said);
        NS_TEST_ASSERT_MSG_NE(fl, "", said);
        for (const auto& g : Rows(fl + "/training_gpus.csv"))
        {
            NS_TEST_EXPECT_MSG_EQ(g[4], std::to_string(perIteration), "bytes received by rank " << g[0]);
        }
        const auto f = Rows(fl + "/iterations.csv");
        NS_TEST_ASSERT_MSG_EQ(f.size(), 1, "one iteration");
        NS_TEST_EXPECT_MSG_GT_OR_EQ(std::stod(f[0][3]), std::stod(f[0][7]), "never below the bound");
        NS_TEST_EXPECT_MSG_LT_OR_EQ(std::stod(f[0][3]), 1.1 * std::stod(f[0][7]), "within 10% of it");

        // Three channels on a fluid NVLink: the same bytes, and neither the
        // iteration nor any collective below its bound.
        const std::string ch = RunTraining("training:path=" + kData + "all-types.txt,channels=3,nvlink=fluid",
                                           "channels",
                                           &said);
        NS_TEST_ASSERT_MSG_NE(ch, "", said);
        // 3 does not divide the sizes: a buffer's pieces differ by a byte, so
        // a rank receives within a few bytes of its share and all of them
        // together exactly what the collectives dictate.
        uint64_t sum = 0;
        for (const auto& g : Rows(ch + "/training_gpus.csv"))
        {
            const auto got = static_cast<int64_t>(std::stoull(g[4]));
            NS_TEST_EXPECT_MSG_LT_OR_EQ(std::abs(got - static_cast<int64_t>(perIteration)), 64, "rank " << g[0]);
            sum += got;
        }
        NS_TEST_EXPECT_MSG_EQ(sum, 16 * perIteration, "every GPU together");
        for (const auto& c : Rows(ch + "/training_collectives.csv"))
        {
            NS_TEST_EXPECT_MSG_EQ(c[9], std::string(c[7] == "sendrecv" ? "1" : "3"), "channels");
            NS_TEST_EXPECT_MSG_GT_OR_EQ(std::stod(c[13]), std::stod(c[14]), "collective " << c[0] << " at its bound");
        }
        const auto cr = Rows(ch + "/iterations.csv");
        NS_TEST_ASSERT_MSG_EQ(cr.size(), 1, "one iteration");
        NS_TEST_EXPECT_MSG_GT_OR_EQ(std::stod(cr[0][3]), std::stod(cr[0][7]), "never below the bound");
        NS_TEST_EXPECT_MSG_LT_OR_EQ(std::stod(cr[0][3]), 1.1 * std::stod(cr[0][7]), "within 10% of it");

        // Weight gradients reduced while the layers below compute: less exposed
        // than communicated.
        const std::string ov = RunTraining("training:path=" + kData + "tp8-dp2-overlap.txt,channels=2", "overlap", &said);
        NS_TEST_ASSERT_MSG_NE(ov, "", said);
        const auto o = Rows(ov + "/iterations.csv");
        NS_TEST_ASSERT_MSG_EQ(o.size(), 1, "one iteration");
        NS_TEST_EXPECT_MSG_LT(std::stod(o[0][6]), std::stod(o[0][5]), "exposed < total communication");
        NS_TEST_EXPECT_MSG_GT_OR_EQ(std::stod(o[0][3]), std::stod(o[0][7]), "never below the bound");

        // A placement file: the TP groups across the two servers (rank r on
        // server r % 2, GPU r / 2): each rank where the file says, the same
        // bytes, never below its own bound, and slower than with each TP
        // group inside a server (its rings leave NVLink for the rail NICs).
        const auto tmp = std::filesystem::temp_directory_path();
        const std::string placePath = (tmp / "tita-training-across.place").string();
        {
            std::ofstream pf(placePath);
            for (uint32_t r = 0; r < 16; ++r)
            {
                pf << r << " " << r % 2 << " " << r / 2 << "\n";
            }
        }
        const std::string pl = RunTraining("training:path=" + kData + "tp8-dp2-overlap.txt,channels=2,placement=" +
                                               placePath,
                                           "placement",
                                           &said);
        NS_TEST_ASSERT_MSG_NE(pl, "", said);
        NS_TEST_EXPECT_MSG_NE(said.find("placed by " + placePath), std::string::npos, said);
        const auto plGpus = Rows(pl + "/training_gpus.csv");
        const auto ovGpus = Rows(ov + "/training_gpus.csv");
        NS_TEST_ASSERT_MSG_EQ(plGpus.size(), 16, "a row per GPU");
        for (std::size_t r = 0; r < plGpus.size(); ++r)
        {
            NS_TEST_EXPECT_MSG_EQ(plGpus[r][1] + "," + plGpus[r][2],
                                  std::to_string(r % 2) + "," + std::to_string(r / 2),
                                  "rank " << r << " where the file puts it");
            NS_TEST_EXPECT_MSG_EQ(plGpus[r][4], ovGpus[r][4], "rank " << r << " receives the same bytes");
        }
        const auto p = Rows(pl + "/iterations.csv");
        NS_TEST_ASSERT_MSG_EQ(p.size(), 1, "one iteration");
        NS_TEST_EXPECT_MSG_GT_OR_EQ(std::stod(p[0][3]), std::stod(p[0][7]), "never below its bound");
        NS_TEST_EXPECT_MSG_GT(std::stod(p[0][3]), 1.1 * std::stod(o[0][3]), "TP across servers is slower (1.26x)");
        // Bad placement files, each named at its line before any output.
        const std::pair<std::string, std::string> bads[] = {
            {"0 0 0\n1 0 1\n1 1 0\n", ":3: rank 1 again (first on line 2)"},
            {"0 0 0\n1 0 0\n", ":2: server 0 GPU 0 already holds rank 0"},
            {"0 0 0\n1 0 x\n", ":2: RANK, SERVER and GPU must be whole numbers"},
            {"0 0 0 0\n", ":1: expected 3 fields (RANK SERVER GPU), found 4"},
            {"16 0 0\n", ":1: rank 16: the workload has ranks 0-15"},
            {"0 0 0\n", ": rank 1 has no line (every rank 0-15 needs one)"},
        };
        for (const auto& [text, want] : bads)
        {
            std::ofstream(placePath) << text;
            NS_TEST_EXPECT_MSG_EQ(
                RunTraining("training:path=" + kData + "tp8-dp2-overlap.txt,placement=" + placePath, "bad-place", &said),
                "",
                "no run");
            NS_TEST_EXPECT_MSG_EQ(said, placePath + want, "the message");
        }
        {
            std::ofstream pf(placePath);
            for (uint32_t r = 0; r < 16; ++r)
            {
                pf << r << " " << r / 8 + (r == 15 ? 1 : 0) << " " << r % 8 << "\n";
            }
        }
        RunTraining("training:path=" + kData + "tp8-dp2-overlap.txt,placement=" + placePath, "bad-place", &said);
        NS_TEST_EXPECT_MSG_EQ(said,
                              placePath + ":16: server 2 GPU 7 is not in the topology (2 servers of 8 GPUs)",
                              "beyond the topology");

        // ring=rail: a DP group of 2 GPUs on each of 2 servers (GPUs 0 and 4:
        // all-types-pp1, tp 4, dp 4) in NCCL's ring order, each hop between
        // servers on one rail, where rank order (0, 4, 8, 12) crosses rails
        // through the spines twice: the same bytes, a faster iteration (0.476
        // against 0.830 ms).
        const std::string rk = RunTraining("training:path=" + kData + "all-types-pp1.txt,nvlink=fluid", "rank-ring", &said);
        NS_TEST_ASSERT_MSG_NE(rk, "", said);
        const std::string rl =
            RunTraining("training:path=" + kData + "all-types-pp1.txt,nvlink=fluid,ring=rail", "rail-ring", &said);
        NS_TEST_ASSERT_MSG_NE(rl, "", said);
        NS_TEST_EXPECT_MSG_NE(said.find("rings rail-aligned"), std::string::npos, said);
        const auto rkGpus = Rows(rk + "/training_gpus.csv");
        const auto rlGpus = Rows(rl + "/training_gpus.csv");
        NS_TEST_ASSERT_MSG_EQ(rlGpus.size(), rkGpus.size(), "a row per GPU");
        for (std::size_t r = 0; r < rlGpus.size(); ++r)
        {
            NS_TEST_EXPECT_MSG_EQ(rlGpus[r][4], rkGpus[r][4], "rank " << r << " receives the same bytes");
        }
        const auto rki = Rows(rk + "/iterations.csv");
        const auto rli = Rows(rl + "/iterations.csv");
        NS_TEST_EXPECT_MSG_GT_OR_EQ(std::stod(rli[0][3]), std::stod(rli[0][7]), "never below its bound");
        NS_TEST_EXPECT_MSG_LT(std::stod(rli[0][3]), 0.75 * std::stod(rki[0][3]), "rail-aligned rings are faster");

        // layers=K says so.
        const std::string k = RunTraining("training:path=" + kData + "tp8-dp2-overlap.txt,layers=1", "layers", &said);
        NS_TEST_EXPECT_MSG_NE(said.find("layers=1: the first 1 of 4 layer lines only"), std::string::npos, said);
        NS_TEST_EXPECT_MSG_EQ(Rows(k + "/iterations.csv")[0][8], "1", "one layer simulated");

        // A bad file stops the run before any output.
        const std::string badPath = (std::filesystem::temp_directory_path() / "tita-training-bad.txt").string();
        std::ofstream(badPath) << "HYBRID_TRANSFORMER model_parallel_NPU_group: 8 all_gpus: 16\n1\nl -1 1\n";
        const std::string none = RunTraining("training:path=" + badPath, "bad", &said);
        NS_TEST_EXPECT_MSG_EQ(none, "", "no run");
        NS_TEST_EXPECT_MSG_EQ(said.rfind(badPath + ":3: expected 12 fields", 0), 0, said);
        NS_TEST_EXPECT_MSG_EQ(std::filesystem::exists(std::filesystem::temp_directory_path() / "tita-training-bad"),
                              false,
                              "no output directory");
    }
};

class TitaTrainingTestSuite : public TestSuite
{
  public:
    TitaTrainingTestSuite()
        : TestSuite("tita-training", UNIT)
    {
        AddTestCase(new TitaTrainingFileTestCase, TestCase::QUICK);
        AddTestCase(new TitaTrainingGroupsTestCase, TestCase::QUICK);
        AddTestCase(new TitaTrainingRunTestCase, TestCase::QUICK);
    }
};

TitaTrainingTestSuite g_titaTrainingTestSuite;

} // namespace
