// Command turnwatch is the turnwatch operator's manager: it runs the AgentRun
// and AgentTurn controllers.
package main

import (
	"flag"
	"os"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/controllers"
	"turnwatch.dev/turnwatch/controllers/shared"
)

func main() {
	var (
		configPath   string
		sidecarImage string
		metricsAddr  string
		probeAddr    string
		leaderElect  bool
		concurrency  int
	)
	flag.StringVar(&configPath, "config", "", "Cluster defaults (guards, prices, rerolls), YAML or JSON. Empty: the built-in defaults.")
	flag.StringVar(&sidecarImage, "sidecar-image", "turnwatch-sidecar:latest", "Image of the injected turnwatch-sidecar container.")
	flag.StringVar(&metricsAddr, "metrics-bind-address", ":8443", "Address of the metrics endpoint (HTTPS; callers need a token allowed to GET /metrics); 0 turns it off.")
	flag.StringVar(&probeAddr, "health-probe-bind-address", ":8081", "Address of the health probes.")
	flag.IntVar(&concurrency, "max-concurrent-reconciles", 4, "How many runs, and how many turns, are reconciled at once.")
	flag.BoolVar(&leaderElect, "leader-elect", false, "Elect a leader, so that only one replica reconciles.")
	opts := zap.Options{}
	opts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))
	log := ctrl.Log.WithName("setup")

	cfg, err := shared.LoadConfig(configPath)
	if err != nil {
		log.Error(err, "reading the config", "path", configPath)
		os.Exit(1)
	}
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(twv1.AddToScheme(scheme))

	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsOptions(metricsAddr),
		HealthProbeBindAddress: probeAddr,
		LeaderElection:         leaderElect,
		LeaderElectionID:       "turnwatch.dev",
		Cache:                  cache.Options{ByObject: controllers.CacheByObject()},
	})
	if err != nil {
		log.Error(err, "creating the manager")
		os.Exit(1)
	}
	if err := controllers.Setup(mgr, controllers.Options{
		Config: cfg, SidecarImage: sidecarImage, Concurrency: concurrency, Clock: clock.RealClock{},
	}); err != nil {
		log.Error(err, "setting up the controllers")
		os.Exit(1)
	}
	utilruntime.Must(mgr.AddHealthzCheck("healthz", healthz.Ping))
	utilruntime.Must(mgr.AddReadyzCheck("readyz", healthz.Ping))

	log.Info("starting the manager", "sidecarImage", sidecarImage)
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		log.Error(err, "running the manager")
		os.Exit(1)
	}
}

// metricsOptions serve the metrics over HTTPS (a self-signed certificate
// unless one is mounted) to callers whose token the API server accepts
// (TokenReview) and who may GET /metrics (SubjectAccessReview): the turn
// counts and costs are the cluster's business, not every Pod's.
func metricsOptions(addr string) metricsserver.Options {
	return metricsserver.Options{
		BindAddress:    addr,
		SecureServing:  true,
		FilterProvider: filters.WithAuthenticationAndAuthorization,
	}
}
