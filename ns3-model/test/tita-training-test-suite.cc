// TestSuite "tita-training": SimAI/AICB workload files (tita-training-file.h):
// layout, groups, units, and malformed files.
#include "tita-spec.h"
#include "tita-training-file.h"

#include "ns3/test.h"

#include <sstream>

using namespace ns3;

namespace
{

const std::string kData = TITA_DATA_DIR "/training/";

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

class TitaTrainingTestSuite : public TestSuite
{
  public:
    TitaTrainingTestSuite()
        : TestSuite("tita-training", UNIT)
    {
        AddTestCase(new TitaTrainingFileTestCase, TestCase::QUICK);
    }
};

TitaTrainingTestSuite g_titaTrainingTestSuite;

} // namespace
