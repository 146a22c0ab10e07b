// The "training" workload kind: a SimAI/AICB workload file run as training
// iterations on a multi-rail topology (TitaTraining, doc/training.md).
#include "tita-training.h"
#include "tita-workload-kinds.h"

namespace ns3
{

namespace
{

class TrainingJob : public TitaWorkloadJob
{
  public:
    TrainingJob(std::shared_ptr<TitaTraining> t, std::shared_ptr<TitaTraining> bound)
        : m_training(std::move(t)),
          m_bound(std::move(bound))
    {
    }

    bool IsDone() const override { return m_training->IsDone() && m_bound->IsDone(); }

    void Finish(TitaOutputWriter& out, TitaNotes& notes) const override
    {
        m_training->Write(out, m_bound.get());
        m_training->Describe(notes, m_bound.get());
    }

  private:
    std::shared_ptr<TitaTraining> m_training;
    std::shared_ptr<TitaTraining> m_bound; // the analytical twin
};

} // namespace

bool
TitaAddTrainingWorkload(TitaWorkloadSet& set, const TitaSpec& sp, std::string* err)
{
    const std::string path = sp.Str("path", "");
    TitaTrainingOptions opts;
    opts.iterations = sp.Count("iterations", 1, 1);
    opts.layers = sp.Count("layers", 0);
    opts.channels = sp.Count("channels", 1, 1);
    opts.pxn = sp.Flag("pxn", false);
    const std::string order = sp.Str("order", "tp");
    if (order != "tp" && order != "dp")
    {
        sp.Bad("order", "'" + order + "': expected tp (TP ranks fastest, Megatron's) or dp");
    }
    opts.dpFirst = order == "dp";
    opts.placementPath = sp.Str("placement", "");
    const std::string ring = sp.Str("ring", "rank");
    if (ring != "rank" && ring != "rail")
    {
        sp.Bad("ring", "'" + ring + "': expected rank (a group's rank order) or rail (NCCL's: hops between servers on one rail)");
    }
    opts.railRing = ring == "rail";
    const std::string nvlink = sp.Str("nvlink", "packet");
    if (nvlink != "packet" && nvlink != "fluid")
    {
        sp.Bad("nvlink", "'" + nvlink + "': expected packet or fluid");
    }
    const Time at = NanoSeconds(sp.TimeNs("at", 0));
    if (!sp.Check(err))
    {
        return false;
    }
    if (path.empty())
    {
        *err = "--workload=training: path=FILE is required";
        return false;
    }
    if (opts.channels > 64)
    {
        *err = "--workload=training: channels: at most 64";
        return false;
    }
    TitaTrainingFile file;
    if (!file.Load(path, err))
    {
        return false; // "FILE:LINE: what is wrong"
    }
    if (!opts.placementPath.empty() && !TitaLoadPlacement(opts.placementPath, file.allGpus, &opts.placement, err))
    {
        return false; // "FILE:LINE: what is wrong"
    }
    const std::size_t all = file.layers.size();
    TitaTrainingOptions twin = opts;
    twin.analytical = true;
    auto bound = std::make_shared<TitaTraining>(set.GetFlowManager(), file, twin);
    auto t = std::make_shared<TitaTraining>(set.GetFlowManager(), std::move(file), opts);
    if (!t->Place(err) || !bound->Place(err))
    {
        return false;
    }
    const TitaTrainingFile& f = t->GetFile();
    if (opts.pxn && !set.GetNetwork().GetTopology().Vertices().empty() &&
        set.GetNetwork().GetTopology().NvlinkHost(0, 0) < 0)
    {
        *err = "--workload=training: pxn=1 needs a multi-rail topology with nvlink=1";
        return false;
    }
    set.Notes().Line() << "training " << path << ": " << f.allGpus << " GPUs, tp " << f.tp << " dp " << f.Dp()
                       << " pp " << f.pp << " ep " << f.ep << " (vpp " << f.vpp << ", ga " << f.ga << "), "
                       << opts.iterations << " iteration(s), " << opts.channels << " channel(s), " << (opts.dpFirst ? "DP" : "TP")
                       << " ranks fastest"
                       << (opts.placement.empty() ? "" : ", placed by " + opts.placementPath)
                       << (opts.railRing ? ", rings rail-aligned" : "")
                       << (f.layers.size() < all ? ", layers=" + std::to_string(f.layers.size()) + ": the first " +
                                                       std::to_string(f.layers.size()) + " of " +
                                                       std::to_string(all) + " layer lines only"
                                                 : ", " + std::to_string(all) + " layer lines")
                       << "\n";
    if (set.GetNetwork().GetTopology().NvlinkHost(0, 0) < 0)
    {
        set.Notes().Line() << "training: the topology has no NVLink fabric (nvlink=1): GPUs of one server talk "
                              "through their rail NICs\n";
    }
    const TitaTopology& topo = set.GetNetwork().GetTopology();
    if (topo.GetNicPorts() == 2)
    {
        std::vector<int32_t> partner(topo.Hosts().size(), -1);
        for (uint32_t s = 0; s < topo.GetNServers(); ++s)
        {
            for (uint32_t g = 0; g < topo.GetGpusPerServer(); ++g)
            {
                const int32_t p0 = topo.PortHost(s, g, 0);
                const int32_t p1 = topo.PortHost(s, g, 1);
                partner[p0] = p1;
                partner[p1] = p0;
            }
        }
        set.GetFlowManager()->SetPortPartners(std::move(partner));
        set.Notes().Line() << "training: dual-port NICs: channels alternate between the ports (channels=2 or more "
                              "to use both); a message whose QP breaks moves to the other port\n";
    }
    if (nvlink == "fluid")
    {
        set.GetFlowManager()->SetFluidNvlink(true);
        set.Notes().Line() << "training: NVLink messages as a fluid (nvlink=fluid): no packets inside a server\n";
    }
    // The analytical twin runs beside it in the same simulation and sends nothing.
    t->Start(at);
    bound->Start(at);
    set.AddJob(std::make_shared<TrainingJob>(t, bound), at);
    return true;
}

} // namespace ns3
