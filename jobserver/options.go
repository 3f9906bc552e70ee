package jobserver

import "go.uber.org/zap"

// Option configures a Server.
type Option interface {
	apply(*serverConfig)
}

type optionFunc func(*serverConfig)

func (f optionFunc) apply(c *serverConfig) { f(c) }

// serverConfig collects the options of NewServer.
type serverConfig struct {
	fifo    bool
	fifoDir string
	token   byte
	log     *zap.Logger
}

// WithFIFO makes the server a named FIFO (--jobserver-auth=fifo:PATH, the
// form make ≥ 4.4 prefers) created in a fresh directory under dir ("" means
// os.TempDir()) and removed by Close. GNU make 4.3 and older do not
// understand it; the default pipe form works with every make.
func WithFIFO(dir string) Option {
	return optionFunc(func(c *serverConfig) { c.fifo, c.fifoDir = true, dir })
}

// WithTokenByte sets the byte the server fills the jobserver with; GNU make
// uses '+', the default. Clients write back whatever byte they read.
func WithTokenByte(b byte) Option {
	return optionFunc(func(c *serverConfig) { c.token = b })
}

// WithLogger logs token recovery and reconciliation failures; nil means
// zap.NewNop().
func WithLogger(l *zap.Logger) Option {
	return optionFunc(func(c *serverConfig) { c.log = l })
}
